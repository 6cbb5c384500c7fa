# Sourced by scripts/setup (with here, node_dir and sudo_cmd set, npm installed): the CouchDB
# adapter's server. Apache CouchDB is not packaged for Debian: a CouchDB-compatible server,
# pouchdb-server from npm, pinned. As root it goes to /opt/mwbench-node (kept between runs on the
# same machine), otherwise to .deps/ in the source tree; mwbench looks in both.
pouchdb_version=4.2.0
if [ "$(cat "$node_dir/.pouchdb-version" 2>/dev/null)" != "$pouchdb_version" ] ||
   [ ! -x "$node_dir/node_modules/.bin/pouchdb-server" ]; then
  echo "scripts/setup: installing pouchdb-server@$pouchdb_version into $node_dir (npm)" >&2
  mkdir -p "$node_dir"
  # --ignore-scripts: no install script may fetch binaries or headers from the network (none is
  # needed: leveldown loads the prebuilt binary it ships).
  (cd "$node_dir" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error "pouchdb-server@$pouchdb_version" >/dev/null)
  echo "$pouchdb_version" >"$node_dir/.pouchdb-version"
fi
