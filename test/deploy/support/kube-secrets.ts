/**
 * The Secrets deploy/k8s/ needs but does not ship (docs/operations.md, "Credentials": the operator makes
 * them with `kubectl create secret`): every Secret its Deployments name, in `secretKeyRef`s and secret
 * volumes, with the keys they read. The tier fills each key with the value compose's variable of the
 * same meaning got, so that the NATS and Redis it runs (with compose's passwords) accept the pods:
 * `rounds-<service>-credentials`' `<store>-password` is `<STORE>_<SERVICE>_PASSWORD`, and any other
 * key is its name in upper case, `-` as `_`, without a file extension (`jwt-private-keys.pem` is
 * JWT_PRIVATE_KEYS). An optional key without such a value is left out, as an operator may.
 */
type K8sDoc = { kind: string; spec?: any };

export interface NeededSecret {
  name: string;
  /** Key → whether the manifests say it is optional. */
  keys: Map<string, boolean>;
}

export function neededSecrets(docs: K8sDoc[]): NeededSecret[] {
  const secrets = new Map<string, NeededSecret>();
  const need = (name: string, key: string, optional: boolean) => {
    const secret = secrets.get(name) ?? { name, keys: new Map<string, boolean>() };
    secret.keys.set(key, (secret.keys.get(key) ?? true) && optional);
    secrets.set(name, secret);
  };
  for (const d of docs.filter((doc) => doc.kind === "Deployment")) {
    const pod = d.spec.template.spec;
    for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
      for (const e of c.env ?? []) {
        const ref = e.valueFrom?.secretKeyRef;
        if (ref) need(ref.name, ref.key, ref.optional === true);
      }
    }
    for (const v of pod.volumes ?? []) {
      if (!v.secret) continue;
      for (const item of v.secret.items ?? [])
        need(v.secret.secretName, item.key, v.secret.optional === true);
    }
  }
  return [...secrets.values()];
}

/** The compose variable whose value a Secret's key holds (see the module comment). */
export function variableOfKey(secret: string, key: string): string {
  const credentials = /^rounds-([a-z]+)-credentials$/.exec(secret);
  const store = /^([a-z]+)-password$/.exec(key);
  if (credentials && store) return `${store[1]}_${credentials[1]}_PASSWORD`.toUpperCase();
  return key
    .replace(/\.[a-z]+$/, "")
    .replace(/-/g, "_")
    .toUpperCase();
}

/** Each needed Secret's data (plain values), from compose's variables; throws on a required key without one. */
export function secretData(
  needed: NeededSecret[],
  vars: Record<string, string>,
): Map<string, Record<string, string>> {
  const out = new Map<string, Record<string, string>>();
  for (const s of needed) {
    const data: Record<string, string> = {};
    for (const [key, optional] of s.keys) {
      const value = vars[variableOfKey(s.name, key)];
      if (value) data[key] = value;
      else if (!optional)
        throw new Error(
          `Secret ${s.name} key ${key}: no compose variable ${variableOfKey(s.name, key)} to fill it`,
        );
    }
    out.set(s.name, data);
  }
  return out;
}
