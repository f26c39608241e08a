// deploy/k8s against the Kubernetes schemas (kubernetes-models: types, required fields and
// enums of every object), and the promises the manifests make to the services, which no schema
// knows: the names the gateways list, the probes, the drain inside the grace period, the gRPC
// ports closed to everyone but gateways and operators. No cluster runs here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import * as core from 'kubernetes-models/v1';
import * as apps from 'kubernetes-models/apps/v1';
import * as autoscaling from 'kubernetes-models/autoscaling/v2';
import * as policy from 'kubernetes-models/policy/v1';
import * as networking from 'kubernetes-models/networking.k8s.io/v1';

const dir = resolve(dirname(fileURLToPath(import.meta.url)), '../../deploy/k8s');
const models = { v1: core, 'apps/v1': apps, 'autoscaling/v2': autoscaling, 'policy/v1': policy, 'networking.k8s.io/v1': networking };

function load(file) {
  return parseAllDocuments(readFileSync(join(dir, file), 'utf8')).map((doc) => {
    assert.deepEqual(doc.errors, [], `${file}: YAML errors`);
    return doc.toJS();
  });
}
const files = readdirSync(dir).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
const objects = files.flatMap((file) => load(file).map((object) => ({ file, object })));
const find = (kind, name) => objects.find(({ object }) => object.kind === kind && object.metadata.name === name)?.object;
const env = (container, name) => container.env?.find((e) => e.name === name)?.value;

test('every object is valid against its Kubernetes schema', () => {
  assert.ok(objects.length >= 15, `${objects.length} objects`);
  for (const { file, object } of objects) {
    const Model = models[object.apiVersion]?.[object.kind];
    assert.ok(Model, `${file}: no schema for ${object.apiVersion} ${object.kind}`);
    assert.doesNotThrow(() => new Model(object).validate(), `${file}: ${object.kind} ${object.metadata.name}`);
  }
});

test('the schemas catch a broken manifest (the check above can fail)', () => {
  const broken = structuredClone(find('Deployment', 'gateway'));
  broken.spec.replicas = 'two';
  delete broken.spec.template.spec.containers[0].name;
  assert.throws(() => new apps.Deployment(broken).validate(), /replicas must be integer|must have required property 'name'/);
});

test('kustomization.yaml lists every manifest but the operator pod, and each is in the namespace', () => {
  const [kustomization] = load('kustomization.yaml');
  assert.deepEqual([...kustomization.resources].sort(), files.filter((f) => f !== 'relayctl.yaml').sort());
  for (const { file, object } of objects) {
    if (object.kind !== 'Namespace') assert.equal(object.metadata.namespace, kustomization.namespace, `${file}: ${object.metadata.name}`);
  }
});

test('the gateways list the router StatefulSet by its stable names, one per replica', () => {
  const routers = find('StatefulSet', 'router');
  const service = find('Service', routers.spec.serviceName);
  assert.equal(service.spec.clusterIP, 'None', 'a headless Service gives each pod its name');
  const expected = Array.from({ length: routers.spec.replicas }, (_, i) => `router-${i}.${routers.spec.serviceName}:7001`).join(',');
  assert.equal(find('ConfigMap', 'relay-config').data.RELAY_ROUTER_ADDRS, expected);
  const ops = find('Pod', 'relayctl').spec.containers[0];
  assert.equal(env(ops, 'RELAY_ROUTER_ADDRS'), expected, 'relayctl asks the same shards');
});

test('every service is probed, and a gateway drains inside its grace period', () => {
  for (const kind of ['Deployment', 'StatefulSet']) {
    for (const { object } of objects.filter((o) => o.object.kind === kind)) {
      for (const c of object.spec.template.spec.containers) {
        assert.ok(c.readinessProbe?.httpGet && c.livenessProbe?.httpGet, `${object.metadata.name}: probes`);
      }
    }
  }
  const gateway = find('Deployment', 'gateway').spec.template.spec;
  const container = gateway.containers[0];
  assert.equal(container.readinessProbe.httpGet.path, '/readyz');
  assert.equal(container.livenessProbe.httpGet.path, '/healthz');
  const drain = Number(/^(\d+)s$/.exec(env(container, 'RELAY_DRAIN_TIMEOUT'))[1]);
  const pause = Number(container.lifecycle.preStop.exec.command[1]);
  assert.ok(gateway.terminationGracePeriodSeconds >= pause + drain + 5, 'preStop pause + drain + margin');
  assert.ok(find('HorizontalPodAutoscaler', 'gateway'));
  assert.equal(find('PodDisruptionBudget', 'gateway').spec.selector.matchLabels.app, 'gateway');
});

test('each service mounts only its own secrets, and reads its keys from a private copy', () => {
  const secretsOf = (spec) => spec.volumes.filter((v) => v.secret).map((v) => v.secret.secretName).sort();
  assert.deepEqual(secretsOf(find('StatefulSet', 'router').spec.template.spec), ['relay-tls-router']);
  assert.deepEqual(secretsOf(find('Deployment', 'authsvc').spec.template.spec), ['relay-key', 'relay-tls-authsvc']);
  assert.deepEqual(secretsOf(find('Deployment', 'gateway').spec.template.spec), ['relay-session-secret', 'relay-tls-gateway']);
  assert.deepEqual(secretsOf(find('Pod', 'relayctl').spec), ['relay-tls-operator']);
  for (const { object } of objects.filter((o) => ['Deployment', 'StatefulSet', 'Pod'].includes(o.object.kind))) {
    const spec = object.spec.template?.spec ?? object.spec;
    const main = spec.containers[0];
    assert.ok(!main.volumeMounts.some((m) => m.mountPath.startsWith('/secrets-in')), `${object.metadata.name}: the group-readable secret is not the one read`);
    assert.match(spec.initContainers[0].command.at(-1), /^umask 077 && cp -L /);
    assert.equal(spec.securityContext.runAsNonRoot, true);
  }
});

test('agents sign in at the public URL: the gateways name the Ingress\'s URL and the issuer, and the Ingress serves the metadata', () => {
  const config = find('ConfigMap', 'relay-config').data;
  const host = find('Ingress', 'relay').spec.rules[0].host;
  assert.equal(config.RELAY_PUBLIC_URL, `https://${host}/mcp`, 'the Ingress\'s URL, never a pod\'s');
  assert.match(config.RELAY_AUTHORIZATION_SERVER, /^https:\/\/[^/]+$/);
  assert.ok(config.RELAY_ALLOWED_HOSTS.split(',').includes(host));
  const gateway = find('Deployment', 'gateway').spec.template.spec.containers[0];
  assert.ok(gateway.envFrom.some((e) => e.configMapRef?.name === 'relay-config'), 'the gateways read it');
});

test('the gRPC ports admit only gateways and operators, the link port gateways only; the Ingress serves /mcp and the sign-in metadata only, unbuffered', () => {
  assert.ok(find('NetworkPolicy', 'default-deny-ingress'));
  for (const [name, port] of [['router-grpc', 7001], ['authsvc-grpc', 7002]]) {
    const rule = find('NetworkPolicy', name).spec.ingress.find((r) => r.ports.some((p) => p.port === port));
    assert.deepEqual(rule.from.map((f) => f.podSelector.matchLabels), [{ app: 'gateway' }, { 'relay.example.com/role': 'operator' }]);
  }
  // The routers' link port: gateways only, and the routers listen on it.
  const link = find('NetworkPolicy', 'router-grpc').spec.ingress.find((r) => r.ports.some((p) => p.port === 7003));
  assert.deepEqual(link.from.map((f) => f.podSelector.matchLabels), [{ app: 'gateway' }]);
  const router = find('StatefulSet', 'router').spec.template.spec.containers[0];
  assert.equal(router.env.find((e) => e.name === 'RELAY_LINK_LISTEN').value, '0.0.0.0:7003');
  const ingress = find('Ingress', 'relay');
  const paths = ingress.spec.rules.flatMap((r) => r.http.paths);
  assert.deepEqual(paths.map((p) => [p.path, p.pathType, p.backend.service.name]), [
    ['/mcp', 'Exact', 'gateway'],
    ['/.well-known/oauth-protected-resource', 'Exact', 'gateway'],
    ['/.well-known/oauth-protected-resource/mcp', 'Exact', 'gateway'],
  ]);
  assert.equal(ingress.metadata.annotations['nginx.ingress.kubernetes.io/proxy-buffering'], 'off');
  assert.ok(Number(ingress.metadata.annotations['nginx.ingress.kubernetes.io/proxy-read-timeout']) >= 3600);
});
