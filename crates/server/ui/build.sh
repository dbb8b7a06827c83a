#!/usr/bin/env bash
# Rebuild the explorer's third-party bundle from the pinned package-lock.json: `npm ci` installs
# exactly the locked Cytoscape.js, and its minified build and license are copied into dist/,
# which is committed (so building ctxgraph needs neither npm nor the network). The page's own
# files (index.html, app.js, style.css) are written by hand and need no build.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --ignore-scripts --no-audit --no-fund
mkdir -p dist
cp node_modules/cytoscape/dist/cytoscape.min.js dist/cytoscape.min.js
cp node_modules/cytoscape/LICENSE dist/cytoscape.LICENSE
rm -rf node_modules
sha256sum dist/cytoscape.min.js
