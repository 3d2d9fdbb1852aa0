// Validates monitoring.coreos.com/v1 resources against the prometheus-operator CRD schemas,
// as compiled by the npm package @kubernetes-models/prometheus-operator (its validators are
// generated from the CRDs' openAPIV3Schema). Run by check_chart.py:
//
//   node validate_crds.mjs <node_modules dir> <listing.json>
//
// where the listing is [{"path": template, "resource": object}, …]. Prints one line per
// invalid resource and exits 1 if there is any.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [modules, listing] = process.argv.slice(2);
const root = join(modules, "@kubernetes-models", "prometheus-operator");
const models = {};
async function model(kind) {
  if (!(kind in models)) {
    const url = pathToFileURL(join(root, "monitoring.coreos.com", "v1", `${kind}.js`));
    try {
      models[kind] = (await import(url.href))[kind];
    } catch (e) {
      models[kind] = null;
    }
  }
  return models[kind];
}

let failures = 0;
for (const { path, resource } of JSON.parse(readFileSync(listing, "utf8"))) {
  const name = `${resource.kind}/${resource.metadata?.name}`;
  const Model = await model(resource.kind);
  if (!Model) {
    console.log(`${path}: ${name}: no monitoring.coreos.com/v1 schema for kind ${resource.kind} in ${root}`);
    failures++;
    continue;
  }
  try {
    new Model(resource).validate();
  } catch (e) {
    console.log(`${path}: ${name} does not match the CRD schema: ${e.message}`);
    failures++;
  }
}
process.exit(failures ? 1 : 0);
