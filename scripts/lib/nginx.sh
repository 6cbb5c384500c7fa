# A throwaway nginx (nginx-light) for the HTTP comparisons (sourced, not run).
# start_nginx DIR PORT [KEEPALIVE_REQUESTS]: one worker, access_log off, every path (root, pid,
# temp, logs) inside DIR, which is made readable by the worker user; serves DIR/www/index.html,
# a 60-byte static file. Sets NGINX_PID. stop_nginx stops it.
start_nginx() {
  local dir=$1 port=$2 keep=${3:-1000}
  local bin
  bin=$(command -v nginx || echo /usr/sbin/nginx)
  [ -x "$bin" ] || { echo "nginx not found (scripts/setup installs nginx-light)" >&2; return 2; }
  mkdir -p "$dir/www" "$dir/tmp"
  printf '%060d' 0 | tr 0 a >"$dir/www/index.html"
  chmod 755 "$dir" "$dir/www" "$dir/tmp"
  chmod 644 "$dir/www/index.html"
  cat >"$dir/nginx.conf" <<EOF
worker_processes 1;
error_log $dir/error.log warn;
pid $dir/nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $dir/tmp/body;
  proxy_temp_path $dir/tmp/proxy;
  fastcgi_temp_path $dir/tmp/fastcgi;
  uwsgi_temp_path $dir/tmp/uwsgi;
  scgi_temp_path $dir/tmp/scgi;
  keepalive_requests $keep;
  server { listen 127.0.0.1:$port; root $dir/www; }
}
EOF
  "$bin" -e "$dir/error.log" -p "$dir" -c "$dir/nginx.conf" -g 'daemon off;' &
  NGINX_PID=$!
  local i
  for ((i = 0; i < 100; i++)); do
    curl -sf "http://127.0.0.1:$port/index.html" >/dev/null 2>&1 && return 0
    kill -0 "$NGINX_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "nginx did not start: $(tail -3 "$dir/error.log" 2>/dev/null)" >&2
  return 2
}

stop_nginx() {
  [ -n "${NGINX_PID:-}" ] || return 0
  kill "$NGINX_PID" 2>/dev/null || true
  wait "$NGINX_PID" 2>/dev/null || true
  NGINX_PID=""
}
