// Graph drawings with Cytoscape.js (loaded by index.html as the global `cytoscape`): node
// ids are `Label:id`, colours by label, failed events red.

const COLOURS = {
  Event: '#4a6fd8', Entity: '#2e9e6b', Memory: '#a35bd6', Summary: '#8a8f99', Fact: '#d08a1e',
  Topic: '#c94f8c', Outcome: '#6b7a8f', Sentence: '#7c8aa5',
};

const STYLE = [
  { selector: 'node', style: {
    'background-color': (n) => (n.data('failed') ? '#c4302b' : COLOURS[n.data('label')] || '#7d8597'),
    label: 'data(caption)', 'font-size': 9, color: '#1d2330', 'text-valign': 'bottom', 'text-margin-y': 3,
    'text-wrap': 'ellipsis', 'text-max-width': 110, width: 16, height: 16,
  } },
  { selector: 'node.center', style: { width: 26, height: 26, 'border-width': 3, 'border-color': '#1d2330' } },
  { selector: 'node.seed', style: { 'border-width': 2, 'border-color': '#1d2330' } },
  { selector: 'edge', style: {
    width: 1.4, 'line-color': '#aab3c5', 'target-arrow-color': '#aab3c5', 'target-arrow-shape': 'triangle',
    'curve-style': 'bezier', label: 'data(caption)', 'font-size': 7, color: '#667085', 'text-rotation': 'autorotate',
  } },
  { selector: 'edge.CAUSED_BY', style: { 'line-color': '#d26b3f', 'target-arrow-color': '#d26b3f' } },
  { selector: 'edge.arc', style: { 'curve-style': 'unbundled-bezier', 'control-point-distances': (e) => e.data('bend') || -40, 'control-point-weights': 0.5 } },
  { selector: 'edge.FOLLOWS', style: { 'line-style': 'dashed' } },
];

/** Whether the drawing library loaded. */
export function available() {
  return typeof window.cytoscape === 'function';
}

/** A Cytoscape node element for a node of the API (`{label, id, properties}`). */
export function nodeElement(node, caption, classes) {
  const p = node.properties || {};
  return {
    group: 'nodes',
    data: { id: node.label + ':' + node.id, label: node.label, nid: node.id, caption: caption || shortCaption(node), failed: p.status === 'failed' },
    classes: classes || '',
  };
}

/** A Cytoscape edge element from `from` to `to` (element ids). */
export function edgeElement(type, from, to, extra) {
  return { group: 'edges', data: { id: type + ':' + from + '->' + to, source: from, target: to, caption: type, ...(extra || {}) }, classes: type };
}

/** A short caption: an event's type and tool, an entity's name, else the id. */
export function shortCaption(node) {
  const p = node.properties || {};
  if (node.label === 'Event') return [p.tool_name || p.event_type, node.id].filter(Boolean).join(' ');
  if (node.label === 'Entity') return p.name || node.id;
  return node.id;
}

/** Draw `elements` in `container`; `onTap(label, id, element)` on a node click. */
export function draw(container, elements, { layout = 'cose', onTap, zoom = true, maxZoom = 4 } = {}) {
  if (!available()) {
    container.textContent = 'the drawing library did not load';
    return null;
  }
  const cy = window.cytoscape({
    container, elements, style: STYLE, userZoomingEnabled: zoom, maxZoom,
    layout: layoutOf(layout),
  });
  if (onTap) cy.on('tap', 'node', (ev) => onTap(ev.target.data('label'), ev.target.data('nid'), ev.target));
  return cy;
}

/** The layout options of a layout name (or options given whole). */
export function layoutOf(layout) {
  if (typeof layout !== 'string') return layout;
  if (layout === 'cose') return { name: 'cose', animate: false, nodeRepulsion: () => 60000, idealEdgeLength: () => 110, nodeOverlap: 20, padding: 20 };
  if (layout === 'row') return { name: 'breadthfirst', directed: true, padding: 10, spacingFactor: 0.9 };
  return { name: layout, padding: 20 };
}

/** Add elements not drawn yet and lay the graph out again. */
export function extend(cy, elements) {
  const fresh = elements.filter((el) => cy.getElementById(el.data.id).empty());
  if (!fresh.length) return 0;
  cy.add(fresh);
  cy.layout(layoutOf('cose')).run();
  return fresh.length;
}
