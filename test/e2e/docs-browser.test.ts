// Tier: one process only (the gateway's /docs page in a browser; it is the same page in both topologies).
/**
 * The /docs page as a person uses it: headless Chromium (Debian's package) loads it, sees every route,
 * authorizes with a demo bearer token, runs GET /rounds/{round_id} from the page and reads a 200 back.
 * Without chromium it is skipped with a message, except under CI=true, where that is a failure.
 */
import fs from "node:fs";
import { chromium, type Browser } from "playwright-core";
import { startSystem, type System } from "../support/system";

const CHROMIUM = "/usr/bin/chromium";
const present = fs.existsSync(CHROMIUM);
if (!present && process.env.CI === "true")
  throw new Error(`${CHROMIUM} is missing (.ci/run installs the chromium package)`);
if (!present) process.stderr.write(`skipping the /docs browser test: ${CHROMIUM} is not installed\n`);
const maybe = present ? describe : describe.skip;

maybe("GET /docs in a browser", () => {
  let sys: System;
  let browser: Browser;

  beforeAll(async () => {
    sys = await startSystem();
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await sys?.stop();
  });

  it("when a person opens the reference, authorizes and tries GET /rounds/{round_id}, then the page shows 200", async () => {
    const page = await browser.newPage();
    await page.goto(`${sys.baseUrl}/docs`);
    await page.waitForSelector(".opblock", { timeout: 20_000 });

    const listed = await page.$$eval(".opblock-summary-path", (els) =>
      els.map((e) => e.getAttribute("data-path")),
    );
    for (const p of [
      "/rounds/{round_id}/join",
      "/rounds/{round_id}",
      "/auth/refresh-token",
      "/stores/{store_id}/events",
      "/users/friends",
      "/users/payments",
      "/app-settings",
      "/notifications/send-multicast",
      "/notifications/{job_id}",
      "/health",
    ]) {
      expect(listed).toContain(p);
    }

    await page.click("button.authorize");
    const bearer = page.locator(".auth-container", { hasText: "HTTPBearer" });
    await bearer.locator("input").fill(sys.manifest.users.alice.access_token);
    await bearer.locator("button.authorize").click();
    await page.click("button.btn-done");

    const op = page.locator("#operations-rounds-rounds_get");
    await op.locator(".opblock-summary").click();
    // The page opens with "Try it out" on (tryItOutEnabled); turn it on only if it is not.
    const tryOut = op.locator("button.try-out__btn");
    if ((await tryOut.innerText()).trim() === "Try it out") await tryOut.click();
    await op.locator('input[placeholder="round_id"]').fill(sys.manifest.rounds.open);
    await op.locator("button.execute").click();
    const status = op.locator(".live-responses-table .response .response-col_status").first();
    await status.waitFor({ timeout: 20_000 });
    expect((await status.innerText()).trim()).toBe("200");
    const body = await op.locator(".live-responses-table .microlight").first().innerText();
    expect(JSON.parse(body).id).toBe(sys.manifest.rounds.open);
  }, 60_000);
});
