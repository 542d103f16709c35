/** settings: app versions per platform. GET /app-settings comes with the accounts issue (501 now). */
import type { ServiceSchema } from "moleculer";
import { NotImplementedError } from "../shared/errors";

const SettingsServiceSchema: ServiceSchema = {
  name: "settings",

  actions: {
    appSettings: {
      handler(): never {
        throw new NotImplementedError();
      },
    },
  },
};

export default SettingsServiceSchema;
