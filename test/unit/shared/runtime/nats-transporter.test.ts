/**
 * The NATS transporter subclass's batching (shared/runtime/nats-transporter): what one turn of the event
 * loop sends is handed to nats.js together at its end, in order. Against a stand-in for nats.js's
 * connection (its `publish`, as Moleculer's transporter calls it), and against a fake NATS server
 * counting the socket writes a real nats.js connection makes.
 */
import net from "node:net";
import { ServiceBroker } from "moleculer";
import { connect, type NatsConnection } from "nats";
import { ReconnectingNatsTransporter } from "../../../../shared/runtime/nats-transporter";

const original = net.Socket.prototype.write;

/** A transporter on a broker (so Moleculer's init has run), its client a recorder of publishes. */
function withRecorder(publish: (topic: string, data: Buffer) => void = () => undefined) {
  const transporter = new ReconnectingNatsTransporter({ url: "nats://127.0.0.1:1" });
  const broker = new ServiceBroker({ nodeID: "t", transporter, logger: false });
  const published: string[] = [];
  transporter.client = {
    publish: (topic: string, data: Buffer) => {
      publish(topic, data);
      published.push(`${topic}:${data.toString()}`);
    },
  } as unknown as NatsConnection;
  return { transporter, broker, published };
}

describe("the NATS transporter's batching of a turn's packets", () => {
  it("when packets are sent during one turn, then none is published before the turn ends and all are, in order, after it", async () => {
    const { transporter, published } = withRecorder();
    const sent = ["a", "b", "c"].map((x) => transporter.send(`T.${x}`, Buffer.from(x), {}));
    await Promise.resolve();
    expect(published).toEqual([]);
    await Promise.all(sent);
    expect(published).toEqual(["T.a:a", "T.b:b", "T.c:c"]);
  });

  it("when packets are sent from several callbacks of one turn, then they are published together, after the last", async () => {
    const { transporter, published } = withRecorder();
    const seenBySecond: string[][] = [];
    const sent: Promise<void>[] = [];
    await new Promise<void>((done) => {
      setImmediate(() => sent.push(transporter.send("T.1", Buffer.from("1"), {})));
      setImmediate(() => {
        seenBySecond.push([...published]);
        sent.push(transporter.send("T.2", Buffer.from("2"), {}));
        done();
      });
    });
    await Promise.all(sent);
    expect(seenBySecond).toEqual([[]]);
    expect(published).toEqual(["T.1:1", "T.2:2"]);
  });

  it("when a publish throws (a closed connection), then that packet's send rejects and the others of its turn go out", async () => {
    const { transporter, published } = withRecorder((topic) => {
      if (topic === "T.bad") throw new Error("connection closed");
    });
    const first = transporter.send("T.ok", Buffer.from("1"), {});
    const bad = transporter.send("T.bad", Buffer.from("2"), {});
    const last = transporter.send("T.ok", Buffer.from("3"), {});
    await expect(bad).rejects.toThrow("connection closed");
    await expect(Promise.all([first, last])).resolves.toEqual([undefined, undefined]);
    expect(published).toEqual(["T.ok:1", "T.ok:3"]);
  });

  it("when the transporter disconnects with packets queued, then they are published before the connection closes", async () => {
    const order: string[] = [];
    const { transporter } = withRecorder((topic) => order.push(`publish ${topic}`));
    Object.assign(transporter.client!, {
      flush: () => Promise.resolve(),
      close: () => {
        order.push("close");
        return Promise.resolve();
      },
    });
    const sent = transporter.send("T.last", Buffer.from("x"), {});
    await transporter.disconnect();
    await sent;
    expect(order[0]).toBe("publish T.last");
    expect(order).toContain("close");
  });
});

const INFO =
  'INFO {"server_id":"t","version":"2.10.0","go":"go","host":"127.0.0.1","port":4222,"headers":true,"max_payload":1048576,"proto":1}\r\n';

describe("the NATS transporter's batching over a real nats.js connection", () => {
  let server: net.Server;
  let port: number;
  /** The chunks read by the fake server after the handshake, each holding one or more PUBs. */
  const pubChunks: string[] = [];
  const sockets: net.Socket[] = [];

  beforeAll(async () => {
    // Just enough of a NATS server: its INFO, a PONG for every PING; every chunk with a PUB is kept.
    server = net.createServer((s) => {
      sockets.push(s);
      s.write(INFO);
      s.on("data", (chunk) => {
        const text = chunk.toString();
        if (text.includes("PING")) s.write("PONG\r\n");
        if (text.includes("PUB ")) pubChunks.push(text);
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as net.AddressInfo).port;
  });

  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  });

  it("when three callbacks of one turn each send a packet, then nats.js writes them to the socket once", async () => {
    const transporter = new ReconnectingNatsTransporter({ url: `nats://127.0.0.1:${port}` });
    new ServiceBroker({ nodeID: "t", transporter, logger: false });
    transporter.client = await connect({ servers: `127.0.0.1:${port}`, reconnect: false });
    // The client's socket writes (the fake server, in this process, reads them all in one chunk).
    const writes: string[] = [];
    const write = jest.spyOn(net.Socket.prototype, "write").mockImplementation(function (
      this: net.Socket,
      ...args: Parameters<net.Socket["write"]>
    ) {
      const data = args[0];
      writes.push(typeof data === "string" ? data : Buffer.from(data as Uint8Array).toString());
      return original.apply(this, args);
    });
    try {
      const sent: Promise<void>[] = [];
      await new Promise<void>((done) => {
        for (const n of [1, 2, 3])
          setImmediate(() => {
            sent.push(transporter.send(`T.${n}`, Buffer.from(`p${n}`), {}));
            if (n === 3) done();
          });
      });
      await Promise.all(sent);
      await transporter.client.flush();
      write.mockRestore();
      const pubs = writes.filter((c) => c.includes("PUB T."));
      expect(pubs).toHaveLength(1);
      expect(pubs[0]).toMatch(/PUB T\.1 2\r\np1\r\nPUB T\.2 2\r\np2\r\nPUB T\.3 2\r\np3\r\n/);
      expect(pubChunks.join("")).toContain("PUB T.3");
    } finally {
      write.mockRestore();
      await transporter.client.close();
    }
  });
});
