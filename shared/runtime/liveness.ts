/**
 * Calls to a process that died must not wait out the request timeout. Moleculer learns of a dead node
 * only from missing heartbeats (3–5 s with our settings), and not at all when the process comes back
 * under the same node ID before that: its pending requests then wait the full REQUEST_TIMEOUT_MS,
 * although the new process will never answer them. Over NATS this middleware closes five gaps:
 *
 * 1. A call pending for longer than `probeAfterMs` makes this node ask the NATS server whether the
 *    callee still listens: each node answers on a subject of its own (`<prefix>.LIVE.<nodeID>`), and a
 *    killed process's subscriptions vanish with its socket, so the server says "no responders" at once.
 *    The node is then treated as disconnected: its pending calls are rejected as retryable and go to
 *    another instance (or end in 503), and it rejoins with its next heartbeat. A slow or busy callee
 *    still answers the probe and is left alone; a probe that times out proves nothing and changes nothing.
 * 2. A node that reappears with another instance ID was restarted: calls pending on the old instance
 *    are rejected at once (retryable), since no one will answer them.
 * 3. When this node's own NATS connection comes back, calls that were pending when it dropped may have
 *    lost their request or their answer (NATS core delivers at most once). Each waits until its callee
 *    has announced itself, and `settleMs` more for the answer the callee held (6); one still
 *    unanswered is rejected as retryable instead of waiting out its timeout.
 * 4. A call sent while its callee was away from NATS (its connection down, the server restarting) is
 *    lost, yet the callee answers the probe once it is back: each node answers the probe with the span
 *    of its last outage, and a caller sends the calls it sent to it within that span again at once,
 *    instead of letting them wait out REQUEST_TIMEOUT_MS: nothing ran them, so this is safe for any
 *    action. (Wall clocks of two hosts: NTP keeps them far closer than the second an outage lasts.)
 * 5. After a NATS outage the nodes find each other at once instead of by heartbeat windows. Moleculer's
 *    NATS transporter announces a reconnected node (INFO and DISCOVER) only with the 1.x client; with
 *    nats 2.x it does nothing, so every node dropped the others for missing beats right after its own
 *    reconnect (they were silent only because it was deaf), and a node that reconnected last could be
 *    dropped just after it answered again, before its first beat (503s after /health/ready said 200).
 *    On reconnect this node announces itself and asks for everyone's INFO, and an INFO from a node
 *    counts as a heartbeat.
 * 6. What is sent while this node's connection is down is lost (nats.js keeps nothing across a
 *    reconnect), and so is what is sent after it is back to a node not back yet. Calls, and the answers
 *    this node owes, are held instead (./reconnect-hold): sent once this node is connected and the node
 *    they go to has announced itself; a held call fails with 503 just before its deadline. While its
 *    own connection is down this node judges no one by silence (it is the one deaf), and a node not
 *    heard from since is neither dropped for silence nor probed until it has had its time to come back.
 *
 * Only nodes that announce `liveProbe` in their metadata are probed, so a process of an older version
 * (no such subject) is never mistaken for a dead one during a rolling upgrade.
 */
import type { Middleware, ServiceBroker } from "moleculer";
import { Errors } from "moleculer";
import type { NatsConnection, Status } from "nats";
import { NatsUnavailableError } from "../errors";
import {
  inRange,
  installedVersion,
  missingFunctions,
  useHook,
  warnHookStopped,
  type HookSettings,
  type InternalsHook,
} from "./internals";
import { ReconnectHold } from "./reconnect-hold";

export interface LivenessOptions {
  /** How long a call may be pending before its callee is probed. */
  probeAfterMs: number;
  /** How long a probe may take; a probe without an answer in time changes nothing. */
  probeTimeoutMs: number;
  /** How often pending calls are looked at. */
  tickMs: number;
  /**
   * After this node's NATS connection is back, how long a call waits at most for its callee to
   * announce itself. Nodes reconnect within nats.js's reconnect wait (and its jitter) of each other.
   */
  confirmWithinMs: number;
  /** A held call fails this long before its deadline (503), so that its caller does not time out (504). */
  holdMarginMs: number;
  /**
   * How long a call pending across this node's outage waits for its answer once its callee has
   * announced itself (the callee held the answer and sends it when it hears from this node), before
   * it is taken as lost and retried.
   */
  settleMs: number;
}

const defaults: LivenessOptions = {
  probeAfterMs: 1000,
  probeTimeoutMs: 1000,
  tickMs: 250,
  confirmWithinMs: 3000,
  holdMarginMs: 100,
  settleMs: 1000,
};

interface PendingRequest {
  nodeID: string;
  action: { name: string; retryPolicy?: { enabled?: boolean; retries?: number } };
  ctx?: { options?: { retries?: number }; _retryAttempts?: number };
  reject(err: Error): void;
}

interface TransitInternals {
  pendingRequests: Map<string, PendingRequest>;
  pendingReqStreams?: Map<string, unknown>;
  pendingResStreams?: Map<string, unknown>;
  tx?: { client?: unknown; prefix?: string };
}

interface NodeLike {
  id: string;
  instanceID?: string;
  local?: boolean;
  available?: boolean;
  metadata?: Record<string, unknown>;
  /** Moleculer's clock for heartbeats: whole seconds of process.uptime(). */
  lastHeartbeatTime?: number;
}

interface RegistryInternals {
  nodes: {
    localNode?: NodeLike;
    get(id: string): NodeLike | undefined;
    toArray(): NodeLike[];
    disconnected(id: string, unexpected: boolean): void;
  };
  discoverer: { sendLocalNodeInfo(): Promise<unknown>; discoverAllNodes(): Promise<unknown> };
}

/** The Moleculer releases whose transit and registry the hook reaches into (docs/architecture.md). */
export const LIVENESS_VERSIONS = ">=0.14.0 <0.15.0";

/** The nats.js releases whose connection the middleware uses through Moleculer's transporter. */
export const NATS_VERSIONS = ">=2.0.0 <3.0.0";

/**
 * What the middleware touches of Moleculer's transit and registry (none of it documented), checked once
 * the broker exists; the NATS connection itself is only there once connected (checked in `started`).
 */
export function livenessNeeds(broker: ServiceBroker): string[] {
  const transit = broker.transit as unknown as Partial<TransitInternals> | undefined;
  const registry = broker.registry as unknown as Partial<RegistryInternals> | undefined;
  const missing: string[] = [];
  if (!transit) return ["a transporter (broker.transit)"];
  if (!(transit.pendingRequests instanceof Map)) missing.push("transit.pendingRequests (a Map)");
  for (const name of ["pendingReqStreams", "pendingResStreams"] as const) {
    if (transit[name] !== undefined && !(transit[name] instanceof Map))
      missing.push(`transit.${name} (a Map)`);
  }
  if (!transit.tx) missing.push("transit.tx");
  missing.push(...missingFunctions(registry?.nodes, "registry.nodes", ["get", "toArray", "disconnected"]));
  if (typeof registry?.nodes?.localNode?.lastHeartbeatTime !== "number") {
    missing.push("registry.nodes.localNode.lastHeartbeatTime (a number)");
  }
  missing.push(
    ...missingFunctions(registry?.discoverer, "registry.discoverer", [
      "sendLocalNodeInfo",
      "discoverAllNodes",
    ]),
  );
  const nats = installedVersion("nats");
  if (nats === null || !inRange(nats, NATS_VERSIONS))
    missing.push(`a nats client ${NATS_VERSIONS} (found ${nats})`);
  return missing;
}

/** What the middleware reads of a call to another node (Moleculer's Context). */
interface RemoteContext {
  id: string;
  nodeID?: string;
  action?: { name: string };
  params?: unknown;
  options: { timeout?: number };
  /** Set by Moleculer's timeout middleware when the call began (its own clock for distributed timeouts). */
  startHrTime?: [number, number];
}

/** The milliseconds a call has left before its timeout (`fallbackMs` for a call without one). */
export function timeLeft(ctx: RemoteContext, fallbackMs: number | undefined): number {
  const timeout = ctx.options.timeout && ctx.options.timeout > 0 ? ctx.options.timeout : fallbackMs || 10_000;
  if (!Array.isArray(ctx.startHrTime)) return timeout;
  const [s, ns] = process.hrtime(ctx.startHrTime);
  return timeout - (s * 1000 + ns / 1e6);
}

/** What the middleware reads of a packet Moleculer's transit publishes. */
interface PacketLike {
  type?: string;
  target?: string | null;
}

const noError = () => new Error("not used");

/** How often a call proved undelivered is sent again. */
const MAX_RESENDS = 2;

const isStream = (params: unknown): boolean =>
  typeof (params as { pipe?: unknown } | null)?.pipe === "function";

/** "Heard from now", in the unit and rounding Moleculer's heartbeat check uses. */
const heardNow = (node: NodeLike) => {
  node.lastHeartbeatTime = Math.round(process.uptime());
};

/** The transporter's NATS connection (nats.js 2.x), or null with another or no transporter. */
function natsConnectionOf(broker: ServiceBroker): NatsConnection | null {
  const client = (broker.transit as unknown as TransitInternals | undefined)?.tx?.client as
    Partial<NatsConnection> | undefined;
  return client && typeof client.request === "function" && typeof client.status === "function"
    ? (client as NatsConnection)
    : null;
}

/**
 * A local event: this process's NATS connection came back after an outage, during which events sent to
 * it were lost. Processes that keep state an event would have changed forget it then.
 */
export const NATS_RECONNECTED_EVENT = "$nats.reconnected";

export const liveSubject = (prefix: string, nodeID: string): string => `${prefix}.LIVE.${nodeID}`;

/** A span of wall-clock time (ms) during which a node was not connected to NATS. */
export interface Outage {
  from: number;
  to: number;
}

export const encodeOutage = (o: Outage): Uint8Array => new TextEncoder().encode(JSON.stringify(o));

/** The outage a probe's answer reports, if any (an older node answers with nothing). */
export function outageOf(data: Uint8Array): Outage | null {
  if (data.length === 0) return null;
  try {
    const o = JSON.parse(new TextDecoder().decode(data)) as Partial<Outage>;
    return typeof o.from === "number" && typeof o.to === "number" && o.from <= o.to
      ? { from: o.from, to: o.to }
      : null;
  } catch {
    return null;
  }
}

const isNoResponders = (err: unknown): boolean => (err as { code?: string } | null)?.code === "503";

/**
 * `settings.off` (INTERNALS_HOOKS_OFF) naming "liveness" leaves Moleculer's own behaviour (heartbeats
 * only), as does a Moleculer whose internals are not what the middleware was written for: checked when
 * the broker is created, and any failure later stops the middleware with one warning, never the process.
 * Only an active middleware announces `liveProbe`, so no node probes one that does not answer.
 */
export function LivenessMiddleware(
  options: Partial<LivenessOptions> = {},
  settings: HookSettings = { off: [] },
): Middleware {
  const opts = { ...defaults, ...options };
  let broker: ServiceBroker;
  let nc: NatsConnection | null = null;
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;
  /** The hook is applied and has not failed since. */
  let active = false;
  /** When each pending call was sent (by its context id), or first seen by a tick if it was not seen leaving. */
  const sentAt = new Map<string, number>();
  /** This node's last NATS outage (wall clock), told to whoever probes it. */
  let lastOutage: Outage | null = null;
  const probing = new Set<string>();
  const instances = new Map<string, string>();
  /** Rejections of calls that provably never reached their callee: the caller sends them again. */
  const undeliveredErrors = new WeakSet<Error>();
  const hold = new ReconnectHold({ confirmWithinMs: opts.confirmWithinMs, marginMs: opts.holdMarginMs });
  /** This node's NATS connection is down (from its status: disconnect, then reconnect). */
  let down = false;

  const transit = () => broker.transit as unknown as TransitInternals;
  const registry = () => broker.registry as unknown as RegistryInternals;
  const logger = () => broker.getLogger("liveness");
  const hookSettings = (): HookSettings => ({
    off: settings.off,
    warn: settings.warn ?? ((m) => logger().warn(m)),
  });

  const hook: InternalsHook<ServiceBroker> = {
    name: "liveness",
    library: "moleculer",
    versions: LIVENESS_VERSIONS,
    check: livenessNeeds,
    apply(b) {
      active = true;
      b.metadata.liveProbe = true;
    },
    remove() {
      active = false;
      if (timer) clearInterval(timer);
      timer = null;
      // Held calls go out, as they would have without the middleware.
      hold.releaseAll();
    },
  };

  /**
   * Moleculer's internals turned out otherwise than checked at start: the middleware stops, and
   * Moleculer goes on on its own. This node still answers probes (a NATS subscription, nothing
   * internal), so no other node takes it for dead.
   */
  const giveUp = (err: unknown) => {
    if (!active) return;
    hook.remove(broker);
    warnHookStopped(hook, (err as Error)?.message ?? String(err), hookSettings());
  };
  /** `fn`, except that a failure stops the middleware instead of reaching Moleculer or the process. */
  const guarded =
    <A extends unknown[]>(fn: (...args: A) => void) =>
    (...args: A): void => {
      if (!active) return;
      try {
        fn(...args);
      } catch (err) {
        giveUp(err);
      }
    };

  /** Rejects pending calls as retryable (Moleculer's own error for a vanished node), as transit does. */
  const rejectPending = (ids: Iterable<string>, undelivered = false) => {
    const t = transit();
    for (const id of ids) {
      const req = t.pendingRequests.get(id);
      if (!req) continue;
      if (typeof req.reject !== "function") throw new Error("a pending request without reject()");
      t.pendingRequests.delete(id);
      t.pendingReqStreams?.delete(id);
      t.pendingResStreams?.delete(id);
      const err = new Errors.RequestRejectedError({ action: req.action.name, nodeID: req.nodeID });
      if (undelivered) undeliveredErrors.add(err);
      req.reject(err);
    }
  };

  const pendingOn = (nodeID: string) =>
    [...transit().pendingRequests.entries()].filter(([, r]) => r.nodeID === nodeID).map(([id]) => id);

  async function probe(nodeID: string): Promise<void> {
    const prefix = transit().tx?.prefix ?? "MOL";
    probing.add(nodeID);
    try {
      const reply = await nc?.request(liveSubject(prefix, nodeID), new Uint8Array(0), {
        timeout: opts.probeTimeoutMs,
      });
      const away = reply ? outageOf(reply.data) : null;
      if (away && !stopped) retrySentWhileAway(nodeID, away);
    } catch (err) {
      const node = registry().nodes.get(nodeID);
      // A node not heard from since this node's outage may simply not be back yet.
      if (isNoResponders(err) && node?.available && !stopped && !down && !hold.awaiting(nodeID)) {
        logger().warn(`Node '${nodeID}' no longer listens on NATS: treated as disconnected.`);
        registry().nodes.disconnected(nodeID, true);
      }
    } finally {
      probing.delete(nodeID);
    }
  }

  /** Calls sent to `nodeID` while it was away from NATS never reached it. */
  function retrySentWhileAway(nodeID: string, away: Outage): void {
    const lost = pendingOn(nodeID).filter((id) => {
      const at = sentAt.get(id);
      return at !== undefined && at >= away.from && at <= away.to;
    });
    if (lost.length === 0) return;
    logger().warn(`Node '${nodeID}' was away from NATS when ${lost.length} call(s) were sent: sent again.`);
    rejectPending(lost, true);
  }

  /** Other nodes with the probe (the ones that announce themselves after an outage). */
  const probedNodes = () =>
    registry()
      .nodes.toArray()
      .filter((n) => !n.local && n.available && n.metadata?.liveProbe);

  function tick(): void {
    if (stopped) return;
    // Deaf, this node hears no one's beats: none of them is taken for gone meanwhile, nor, once it is
    // back, a node it still waits for (./reconnect-hold bounds that wait).
    for (const node of registry().nodes.toArray()) {
      if (!node.local && node.available && (down || hold.awaiting(node.id))) heardNow(node);
    }
    const now = Date.now();
    const pending = transit().pendingRequests;
    for (const id of sentAt.keys()) if (!pending.has(id)) sentAt.delete(id);
    const suspects = new Set<string>();
    for (const [id, req] of pending) {
      if (typeof req?.nodeID !== "string") throw new Error("a pending request without nodeID");
      const seen = sentAt.get(id);
      if (seen === undefined) sentAt.set(id, now);
      else if (now - seen >= opts.probeAfterMs) suspects.add(req.nodeID);
    }
    for (const nodeID of suspects) {
      const node = registry().nodes.get(nodeID);
      if (probing.has(nodeID) || !node?.available || !node.metadata?.liveProbe) continue;
      if (down || hold.awaiting(nodeID)) continue;
      probe(nodeID).catch(giveUp);
    }
  }

  /** A restarted node (same ID, new instance): what its old instance had in hand is lost. */
  function onNodeInfo({ node }: { node: NodeLike }): void {
    if (node.local || !node.instanceID) return;
    // An INFO is as good a sign of life as a beat (Moleculer counts it only for a node it had dropped).
    if (node.available) heardNow(node);
    // It listens on NATS again (it sends its INFO once reconnected): calls held for it go out.
    hold.heard(node.id);
    const before = instances.get(node.id);
    instances.set(node.id, node.instanceID);
    if (before !== undefined && before !== node.instanceID) {
      const lost = pendingOn(node.id);
      if (lost.length > 0) {
        logger().warn(`Node '${node.id}' restarted: ${lost.length} call(s) to its old instance retried.`);
        rejectPending(lost);
      }
    }
  }

  /**
   * Tells every node at once that this one is back, and asks for their INFO: those connected answer
   * within milliseconds, which counts as their beat (onNodeInfo), so they are not dropped for a silence
   * that was this node's. Those not back yet are dropped at the next check, so calls to them fail fast
   * instead of being lost, and rejoin with the INFO they send when they reconnect.
   */
  function announceAfterOutage(): void {
    const discoverer = registry().discoverer;
    void Promise.resolve()
      .then(() => discoverer.sendLocalNodeInfo())
      .then(() => discoverer.discoverAllNodes())
      .catch((err: unknown) => logger().warn("NATS reconnected, but announcing this node failed.", err));
  }

  /** Calls pending when the connection dropped are retried once it is back. */
  async function watchConnection(conn: NatsConnection): Promise<void> {
    let atDisconnect: string[] = [];
    let downSince = 0;
    for await (const s of conn.status() as AsyncIterable<Status>) {
      if (stopped || !active) return;
      if (s.type === "disconnect") {
        atDisconnect = [...transit().pendingRequests.keys()];
        downSince = Date.now();
        down = true;
        hold.lost(probedNodes().map((n) => n.id));
        logger().warn(
          `NATS connection lost with ${atDisconnect.length} call(s) pending: reconnecting, new calls held.`,
        );
      } else if (s.type === "reconnect") {
        if (downSince > 0) lastOutage = { from: downSince, to: Date.now() };
        // Every node gets a whole heartbeat window from now to show it is back (or be dropped).
        for (const node of registry().nodes.toArray()) if (!node.local && node.available) heardNow(node);
        down = false;
        logger().warn(
          `NATS reconnected after ${downSince > 0 ? Date.now() - downSince : "?"} ms; ${hold.held} held call(s) and answer(s) go out as their nodes announce themselves.`,
        );
        hold.back();
        // Moleculer's NATS transporter does not see this reconnection (with nats 2.x), so its
        // `$transporter.connected` never comes: what forgets state on a lost event listens to this one.
        broker.broadcastLocal(NATS_RECONNECTED_EVENT, {});
        const across = atDisconnect.filter((id) => transit().pendingRequests.has(id));
        atDisconnect = [];
        settleAcrossOutage(across);
        announceAfterOutage();
      }
    }
  }

  /** Whether the broker's retry policy repeats this call once it is rejected as retryable. */
  function retriedByBroker(req: PendingRequest): boolean {
    const policy = { ...broker.options.retryPolicy, ...req.action?.retryPolicy };
    if (!policy.enabled) return false;
    const retries = req.ctx?.options?.retries ?? policy.retries ?? 0;
    return retries > (req.ctx?._retryAttempts ?? 0);
  }

  /**
   * Calls pending when the connection dropped: the request or its answer may be lost (NATS core is at
   * most once). One the broker repeats anyway (a read, a join) is retried at once; its repeat is held
   * until the callee is back. One it never repeats (a refresh) can still end well: a callee with the
   * probe holds the answers it could not send and sends them once it hears from this node, so such a
   * call waits until its callee has announced itself and `settleMs` more, and only one still
   * unanswered then is rejected. A callee without the probe holds nothing: rejected at once.
   */
  function settleAcrossOutage(ids: string[]): void {
    const byNode = new Map<string, string[]>();
    const retryNow: string[] = [];
    for (const id of ids) {
      const req = transit().pendingRequests.get(id);
      if (!req || typeof req.nodeID !== "string") continue;
      if (retriedByBroker(req)) retryNow.push(id);
      else byNode.set(req.nodeID, [...(byNode.get(req.nodeID) ?? []), id]);
    }
    if (retryNow.length > 0) {
      logger().warn(`NATS reconnected: ${retryNow.length} call(s) pending across the outage retried.`);
      rejectPending(retryNow);
    }
    for (const [nodeID, list] of byNode) {
      const retry = () => {
        if (stopped || !active) return;
        const lost = list.filter((id) => transit().pendingRequests.has(id));
        if (lost.length === 0) return;
        logger().warn(
          `NATS reconnected: ${lost.length} call(s) to '${nodeID}' pending across the outage got no answer: retried.`,
        );
        rejectPending(lost);
      };
      if (!registry().nodes.get(nodeID)?.metadata?.liveProbe) {
        guarded(retry)();
        continue;
      }
      // Resolves once the callee is heard from, or its window to come back has passed.
      void hold
        .wait(nodeID, opts.confirmWithinMs + opts.holdMarginMs + opts.settleMs, noError, noError)
        .catch(() => undefined)
        .then(() => setTimeout(guarded(retry), opts.settleMs).unref());
    }
  }

  /** A node dropped from the registry (gone for good, or not back in time): its held calls go elsewhere. */
  function onNodeGone({ node }: { node: NodeLike }): void {
    hold.gone(node.id);
  }

  const onNodeEvent = guarded(onNodeInfo);
  const onNodeGoneEvent = guarded(onNodeGone);
  const guardedTick = guarded(tick);

  return {
    name: "Liveness",
    created(b: ServiceBroker) {
      broker = b;
      // Before any service registers: the metadata set here is in this node's first INFO.
      if (!useHook(hook, broker, hookSettings())) return;
      // From the start, so that every node's first instance is known before it can restart.
      broker.localBus.on("$node.connected", onNodeEvent);
      broker.localBus.on("$node.updated", onNodeEvent);
      broker.localBus.on("$node.disconnected", onNodeGoneEvent);
    },
    started() {
      if (!active) return;
      nc = natsConnectionOf(broker);
      if (!nc) {
        // Nothing answers this node's probe subject: no longer invite probes (from its next INFO on).
        delete broker.metadata.liveProbe;
        giveUp(new Error("the transporter's client is not a nats 2.x connection"));
        return;
      }
      const prefix = transit().tx?.prefix ?? "MOL";
      nc.subscribe(liveSubject(prefix, broker.nodeID), {
        callback: (_err, msg) => msg.respond(lastOutage ? encodeOutage(lastOutage) : undefined),
      });
      watchConnection(nc).catch(giveUp);
      timer = setInterval(guardedTick, opts.tickMs);
      timer.unref();
    },
    // Every call to another node: held while NATS reconnects (6), and when it left, for retrySentWhileAway.
    // A call the probe proved never reached its callee (4) is sent again, the same call under the same
    // id: safe for any action, since nothing ran it. At most twice, within its own time, never a
    // stream (its chunks are already read).
    remoteAction(next: (ctx: RemoteContext) => Promise<unknown>) {
      const send = (ctx: RemoteContext) => {
        if (active) sentAt.set(ctx.id, Date.now());
        return next(ctx);
      };
      const attempt = (ctx: RemoteContext, resent: number): Promise<unknown> => {
        const nodeID = ctx.nodeID;
        const action = ctx.action?.name ?? "?";
        const sent =
          !active || !nodeID || !hold.holds(nodeID)
            ? send(ctx)
            : hold
                .wait(
                  nodeID,
                  timeLeft(ctx, broker.options.requestTimeout),
                  () => new NatsUnavailableError(action, nodeID),
                  () => new Errors.RequestRejectedError({ action, nodeID }),
                )
                .then(() => send(ctx));
        return sent.catch((err: unknown) => {
          const again =
            undeliveredErrors.has(err as Error) &&
            resent < MAX_RESENDS &&
            !isStream(ctx.params) &&
            timeLeft(ctx, broker.options.requestTimeout) > opts.holdMarginMs;
          if (!again) throw err;
          return attempt(ctx, resent + 1);
        });
      };
      return (ctx: RemoteContext) => attempt(ctx, 0);
    },
    // Every packet this node publishes: an answer to a call is held while the connection is down, and
    // once it is back until its caller has announced itself (6); nats.js would drop it, and the caller
    // would take a call its callee finished for lost. Held no longer than a caller waits for an answer.
    transitPublish(next: (packet: PacketLike) => Promise<unknown>) {
      return (packet: PacketLike) => {
        const target = packet?.target;
        if (!active || packet?.type !== "RES" || typeof target !== "string" || !hold.holds(target)) {
          return next(packet);
        }
        const dropped = () => new Error(`answer for '${target}' not sent`);
        return hold.wait(target, broker.options.requestTimeout || 10_000, dropped, dropped).then(
          () => next(packet),
          () =>
            logger().warn(
              `An answer to '${target}' held across a NATS outage was dropped: its caller stopped waiting.`,
            ),
        );
      };
    },
    stopped() {
      stopped = true;
      if (timer) clearInterval(timer);
      hold.releaseAll();
    },
  } as unknown as Middleware;
}
