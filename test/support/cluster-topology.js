// The "cluster" jest project: startSystem() runs the system as separate processes over NATS and Redis.
process.env.SYSTEM_TOPOLOGY = "cluster";
