# A real HTTPS server on loopback for skiff's tests, with its own test CA.
# Source after tests/t/lib.sh:
#
#   . "$SRC_DIR/tests/lib/https.sh"
#   https_need_tools || test_skip_all "no openssl/python3"
#   https_make_certs "$TRASH/pki"           # ca.pem, srv.pem (localhost), self.pem, other-ca.pem
#   https_start "$TRASH/pki" srv "$TRASH/www" && port=$HTTPS_PORT
#   skiff __fetch --ca "$TRASH/pki/ca.pem" "https://localhost:$port/files/x.tar.gz" cache
#   https_stop_all                          # in test_cleanup_hook (and an EXIT trap)
#
# The server (tests/lib/https-server.py) serves ROOT and a few test routes (chunked,
# stalled, slow, flaky, redirects, status codes); its request log is PKI/NAME.log.

HTTPS_LIB_DIR=$SRC_DIR/tests/lib
. "${SRC_DIR:?tests/lib/https.sh: set SRC_DIR to the source tree first}/tests/lib/packages.sh"
HTTPS_PIDS=""
HTTPS_PORT=""

# Installs openssl and python3 with apt when missing (root only). 0 when both are there.
https_need_tools() {
	pkg_install openssl python3 || return 1
	command -v openssl >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1
}

# https_make_certs DIR: a test CA (ca.pem) and a server certificate it signed for
# DNS:localhost (srv.pem, srv.key); a self-signed localhost certificate (self.pem,
# self.key); another CA that signed nothing here (other-ca.pem). EC P-256: quick to make.
https_make_certs() {
	_hm_d=$1
	mkdir -p "$_hm_d" || return 1
	(
		cd "$_hm_d" || exit 1
		_k="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
		# shellcheck disable=SC2086
		openssl req -x509 $_k -keyout ca.key -out ca.pem -days 2 -subj "/CN=skiff test CA" \
			-addext "basicConstraints=critical,CA:TRUE" \
			-addext "keyUsage=critical,keyCertSign,cRLSign" &&
			openssl req -x509 $_k -keyout other-ca.key -out other-ca.pem -days 2 \
				-subj "/CN=skiff other CA" -addext "basicConstraints=critical,CA:TRUE" &&
			openssl req $_k -keyout srv.key -out srv.csr -subj "/CN=localhost" &&
			printf '%s\n' 'subjectAltName=DNS:localhost' 'basicConstraints=CA:FALSE' \
				'extendedKeyUsage=serverAuth' >srv.ext &&
			openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
				-out srv.pem -days 2 -extfile srv.ext &&
			openssl req -x509 $_k -keyout self.key -out self.pem -days 2 -subj "/CN=localhost" \
				-addext "subjectAltName=DNS:localhost"
	) >"$_hm_d/openssl.log" 2>&1 || { cat "$_hm_d/openssl.log" >&2; return 1; }
}

# https_start DIR NAME ROOT [CERT]: starts a server with DIR/CERT.pem (default srv) serving
# ROOT; returns once it listens, with its port in $HTTPS_PORT (and DIR/NAME.port). Call it
# in the test script's own shell (not in $(...)), so that https_stop_all can stop it.
# Log: DIR/NAME.log; pid: DIR/NAME.pid.
https_start() {
	_hs_d=$1 _hs_n=$2 _hs_root=$3 _hs_c=${4:-srv}
	rm -f "$_hs_d/$_hs_n.port"
	python3 "$HTTPS_LIB_DIR/https-server.py" --cert "$_hs_d/$_hs_c.pem" \
		--key "$_hs_d/$_hs_c.key" --root "$_hs_root" --port-file "$_hs_d/$_hs_n.port" \
		--log "$_hs_d/$_hs_n.log" >"$_hs_d/$_hs_n.out" 2>&1 &
	echo $! >"$_hs_d/$_hs_n.pid"
	HTTPS_PIDS="$HTTPS_PIDS $!"
	_hs_i=0
	while [ ! -s "$_hs_d/$_hs_n.port" ]; do
		if ! kill -0 "$(cat "$_hs_d/$_hs_n.pid")" 2>/dev/null || [ $_hs_i -ge 500 ]; then
			echo "https server $_hs_n did not start:" >&2
			cat "$_hs_d/$_hs_n.out" >&2
			return 1
		fi
		_hs_i=$((_hs_i + 1))
		sleep 0.02
	done
	HTTPS_PORT=$(cat "$_hs_d/$_hs_n.port")
}

# Stops every server https_start started in this shell.
https_stop_all() {
	for _hs_p in $HTTPS_PIDS; do
		kill "$_hs_p" 2>/dev/null
	done
	for _hs_p in $HTTPS_PIDS; do
		wait "$_hs_p" 2>/dev/null
	done
	HTTPS_PIDS=""
}
