/**
 * The name a public answer gives a storage node: `node-N`, its place (from 1) in STORAGE_NODES;
 * `node-retired` for one no longer listed. Clients and logs of the public port never see a node's
 * address; operators map names to addresses with the operator `/readyz` or the configuration.
 */
export function nodeName(nodes: readonly string[], url: string): string {
  const index = nodes.indexOf(url);
  return index < 0 ? 'node-retired' : `node-${index + 1}`;
}
