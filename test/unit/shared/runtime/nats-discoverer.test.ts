/**
 * The discoverer that does not hold this node's own NATS outage against its peers
 * (shared/runtime/nats-discoverer): Moleculer's heartbeat check, on a registry holding one peer silent
 * for longer than `heartbeatTimeout`, runs or not as the transporter says the connection is or was
 * just lost. Moleculer's own `checkRemoteNodes` does the dropping, so a Moleculer whose discoverer no
 * longer has it fails here.
 */
import { ServiceBroker } from "moleculer";
import { ReconnectAwareDiscoverer } from "../../../../shared/runtime/nats-discoverer";
import {
  RECONNECT_WINDOW_MS,
  ReconnectingNatsTransporter,
} from "../../../../shared/runtime/nats-transporter";

/** The discoverer on a registry of one remote peer, last heard a long time ago. */
function silentPeer(withinReconnect: boolean) {
  const transporter = new ReconnectingNatsTransporter({ url: "nats://127.0.0.1:1" });
  const asked: number[] = [];
  jest.spyOn(transporter, "withinReconnect").mockImplementation((ms: number) => {
    asked.push(ms);
    return withinReconnect;
  });
  const discoverer = new ReconnectAwareDiscoverer(transporter);
  const dropped: [string, boolean][] = [];
  const peer = { id: "peer", local: false, available: true, lastHeartbeatTime: -100 };
  const broker = new ServiceBroker({ nodeID: "t", logger: false, heartbeatTimeout: 2 });
  discoverer.init({
    broker,
    nodes: {
      localNode: null,
      toArray: () => [peer],
      disconnected: (id: string, unexpected: boolean) => dropped.push([id, unexpected]),
    },
  } as unknown as Parameters<ReconnectAwareDiscoverer["init"]>[0]);
  return { discoverer, dropped, asked };
}

describe("the NATS discoverer's heartbeat check", () => {
  it("when this node's connection is up and has been for longer than the grace, then a silent peer is dropped, as Moleculer's check does", () => {
    const { discoverer, dropped, asked } = silentPeer(false);
    discoverer.checkRemoteNodes();
    expect(asked).toEqual([RECONNECT_WINDOW_MS]);
    expect(dropped).toEqual([["peer", true]]);
  });

  it("when this node's connection is down or came back within the grace, then no peer is dropped for the beats missed", () => {
    const { discoverer, dropped } = silentPeer(true);
    discoverer.checkRemoteNodes();
    expect(dropped).toEqual([]);
  });
});
