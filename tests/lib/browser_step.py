"""One step of tests/lib/dashboard_browser.cjs, run by the test script's browser server
(tests/lib/browser_server.cjs) at SOCKET: its findings on stdout, its reasons on stderr,
its exit status (0, or 1 when the step failed; 2 when the server did not answer).

    python3 browser_step.py SOCKET URL STEP ARGS...
"""
import json
import socket
import sys

# A step waits on a node for at most 60 s (dashboard_browser.cjs, NODE_WAIT), a few times.
ANSWER_TIMEOUT_S = 300


def main():
    sock_path, url, step, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    req = json.dumps({"url": url, "step": step, "args": args}) + "\n"
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(ANSWER_TIMEOUT_S)
            s.connect(sock_path)
            s.sendall(req.encode())
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        answer = json.loads(data)
    except (OSError, ValueError) as e:
        sys.stderr.write("browser_step: no answer from the browser server at %s: %s\n" % (sock_path, e))
        return 2
    sys.stdout.write(answer["out"])
    sys.stderr.write(answer["err"])
    return answer["code"]


if __name__ == "__main__":
    sys.exit(main())
