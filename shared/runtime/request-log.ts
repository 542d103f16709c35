/**
 * Logs every failed action call with its request id (the gateway's X-Request-ID, carried in
 * ctx.requestID across nodes), so one request can be followed through the logs of every service it
 * touched. Client errors (4xx) are expected answers and logged at debug, and so are the refusals the
 * system makes on purpose with a status of 5xx (e.g. every upload slot taken: 503): under a flood of them
 * a line each would bury what matters; they are counted by the broker's metrics (errors by type). The
 * rest at error.
 */
import type { Context, Middleware, ServiceBroker } from "moleculer";
import { isOwnErrorType } from "../errors";

export function RequestLogMiddleware(): Middleware {
  let logger: ReturnType<ServiceBroker["getLogger"]>;
  return {
    name: "RequestLog",
    created(broker: ServiceBroker) {
      logger = broker.getLogger("request");
    },
    localAction(next: (ctx: Context) => Promise<unknown>, action: { name: string }) {
      return function logFailures(ctx: Context) {
        return next(ctx).catch((err: { code?: number; message?: string; type?: unknown }) => {
          const where = {
            action: action.name,
            requestID: ctx.requestID,
            nodeID: ctx.nodeID,
            caller: ctx.caller,
          };
          const code = typeof err?.code === "number" ? err.code : 500;
          if (code >= 500 && !isOwnErrorType(err?.type))
            logger.error(`${action.name} failed: ${err?.message}`, where);
          else logger.debug(`${action.name} answered ${code}: ${err?.message}`, where);
          throw err;
        });
      };
    },
  } as unknown as Middleware;
}
