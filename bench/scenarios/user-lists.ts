/** Scenario 4: the per-user cached lists, each request as one of several users. */
import { record } from "../baseline";
import { load } from "../load";
import { bearer, pick, type ScenarioFactory } from "./scenario";

const userList =
  (key: string, path: "/users/friends" | "/users/payments"): ScenarioFactory =>
  (f) => ({
    key,
    title: `GET ${path}, ${f.listUsers.length} users`,
    connections: 64,
    record: async (url) => [await record(url + path, { headers: bearer(f.listUsers[0].access) })],
    measure: ({ url, seconds }) =>
      load({
        url,
        connections: 64,
        seconds,
        requests: [
          {
            method: "GET",
            path,
            setupRequest: (req) => ({ ...req, headers: bearer(pick(f.listUsers).access) }),
          },
        ],
      }),
  });

export const friends = userList("4a", "/users/friends");
export const payments = userList("4b", "/users/payments");
