# shellcheck shell=sh
# skiff's frames by hand (lib/proto.h: a 4-byte big-endian length, then KEY NUL VALUE NUL
# fields), for tests that speak to a node or a controller host as the launcher does:
#   python3 -c "$frame_py" KEY VALUE ... >req     one frame of those fields
#   python3 -c "$frames_py" FILE                   each frame of FILE as KEY=VALUE ... line
# shellcheck disable=SC2034 # used by the scripts that source this
frames_py='
import struct, sys
data = open(sys.argv[1], "rb").read()
while data:
    n = struct.unpack(">I", data[:4])[0]
    f = data[4:4 + n].split(b"\0")
    print(" ".join("%s=%s" % (f[i].decode(), f[i + 1].decode()) for i in range(0, len(f) - 1, 2)))
    data = data[4 + n:]
'
# shellcheck disable=SC2034
frame_py='
import struct, sys
body = b"".join(a.encode() + b"\0" for a in sys.argv[1:])
sys.stdout.buffer.write(struct.pack(">I", len(body)) + body)
'
