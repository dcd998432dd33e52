#!/usr/bin/env python3
"""Checks that every program the test suite runs comes from tests/packages.list.

The suite's scripts (tests/t, tests/lib, tests/bench, tests/fuzz, tests/run-tests, .ci/run)
are read as shell text; the words in command position (the start of a line or of a
command after ; && || | ( $( ` { and the keywords then do else !, past variable
assignments and prefix commands like timeout, env, exec or ip netns exec NS) are the
commands they run. For each such word that is not a shell builtin or keyword, nor a
function the scripts define, nor skiff itself:

  - a word that names a command of tests/packages.list is fine;
  - a word found on this machine as a program must belong to a package that every Debian
    system has (Essential: yes or Priority: required), or to one that the list installs;
  - a word that a script checks for (command -v WORD, test_have_cmd WORD) but that is
    neither listed nor on the machine is an error: nothing would install it.

Heredoc bodies (Python, YAML, files a test writes) and comments are not shell and are not
read. Prints one "FILE:LINE: WORD: why" per problem and exits 1 when there is any;
--list prints the commands found with where they come from; --top DIR reads another tree
(t0925 shows the check failing on a copy whose list lacks a package)."""
import os, re, shutil, subprocess, sys

top = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
if "--top" in sys.argv:
    top = os.path.abspath(sys.argv[sys.argv.index("--top") + 1])

BUILTINS = set("""
. : [ [[ ]] alias bg break builtin cd command continue declare echo eval exec exit export
false fc fg getopts hash jobs kill let local printf pwd read readonly return set shift
source test times trap true type typeset ulimit umask unalias unset wait case esac do done
elif else fi for function if in select then until while time
""".split())
# Words that take a command after them (with options, and for some a fixed count of
# arguments first).
PREFIX = {"timeout": 1, "env": 0, "exec": 0, "nohup": 0, "setsid": 0, "sudo": 0, "nice": 0,
          "xargs": 0, "flock": 1, "chroot": 1, "ionice": 0, "stdbuf": 0, "command": 0,
          "builtin": 0, "unshare": 0, "nsenter": 0, "taskset": 1, "chrt": 1}
WORD = re.compile(r"^[A-Za-z][A-Za-z0-9._+-]*$")
SEP = re.compile(r"&&|\|\||[;|&(){}`!]|\$\(|\bthen\b|\bdo\b|\belse\b|\btime\b")
ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
HEREDOC = re.compile(r"<<-?\s*\\?['\"]?([A-Za-z_][A-Za-z0-9_]*)['\"]?")
FUNC = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(\)")
DESC = re.compile(r"^\s*test_expect_success\s+([A-Z_,!]+\s+)?'[^']*'")
CHECK = re.compile(r"(?:command -v|test_have_cmd|which)\s+([A-Za-z][A-Za-z0-9._+-]*)")


def scripts():
    out = []
    for d in ("tests/t", "tests/lib", "tests/bench", "tests/fuzz", "tests/lint"):
        for f in sorted(os.listdir(os.path.join(top, d))):
            p = os.path.join(d, f)
            if f.endswith(".sh"):
                out.append(p)
    out += ["tests/run-tests", ".ci/run"]
    return [p for p in out if os.path.isfile(os.path.join(top, p))]


def shell_lines(path):
    """(lineno, text) of the shell lines of PATH: heredoc bodies and comments dropped, and
    the text inside double quotes blanked (a test's description, a message, python3 -c
    code). Single quotes are read through: a test's body is single-quoted shell."""
    lines = open(os.path.join(top, path), encoding="utf-8", errors="replace").read().split("\n")
    end = None
    dq = False
    for i, line in enumerate(lines, 1):
        if end is not None:
            if line.strip() == end:
                end = None
            continue
        out, j = [], 0
        while j < len(line):
            c = line[j]
            if c == "\\":
                out.append("  " if dq else line[j:j + 2])
                j += 2
                continue
            if c == '"':
                # The string stands where it is (as a word: "$SKIFF_BIN" init is not the
                # command init), its text does not.
                if not dq:
                    out.append(" %Q% ")
                dq = not dq
            elif dq:
                out.append(" ")
            elif c == "#" and (j == 0 or line[j - 1] in " \t;&|("):
                break
            else:
                out.append(c)
            j += 1
        text = "".join(out)
        # A test's description is text; $(( )) is arithmetic.
        text = DESC.sub(" ", text)
        text = text.replace("$((", " %A% ").replace("((", " %A% ")
        m = HEREDOC.search(text)
        if m:
            end = m.group(1)
            text = text[: m.start()]
        yield i, text


def listed():
    cmds, pkgs = {}, set()
    for line in open(os.path.join(top, "tests/packages.list"), encoding="utf-8"):
        line = line.split("#", 1)[0].split()
        if not line:
            continue
        pkgs.add(line[0])
        for c in line[2:]:
            cmds[c] = line[0]
    return cmds, pkgs


def command_words(text):
    for part in SEP.split(text):
        words = part.replace("'", " ").replace('"', " ").split()
        i = 0
        while i < len(words):
            w = words[i]
            if ASSIGN.match(w):
                i += 1
                continue
            if w in PREFIX:
                yield w
                i += 1
                while i < len(words) and words[i].startswith("-"):
                    i += 1
                i += PREFIX[w]
                continue
            if w == "ip" and words[i + 1:i + 3] == ["netns", "exec"]:
                yield w
                i += 4
                continue
            yield w
            break


_pkg_cache = {}
# Path -> its owners, as `dpkg-query -S` says; filled for many paths at once by
# owners_prefetch(): each call reads every package's file list (a tenth of a second), so
# one call per program made the check take 20 s.
_owners = {}
SEARCH_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def candidates(word):
    """The paths dpkg may know the program WORD by (usrmerge: with and without /usr)."""
    path = shutil.which(word, path=SEARCH_PATH)
    if not path:
        return None, []
    cands = [path, os.path.realpath(path)]
    for alt in list(cands):
        if alt.startswith("/usr/"):
            cands.append(alt[4:])
        else:
            cands.append("/usr" + alt)
    return path, cands


def owners_fetch(paths):
    """One `dpkg-query -S` for all PATHS (a pattern that starts with / is matched
    exactly): their owners into _owners; a path it does not name has none."""
    paths = sorted(set(paths) - set(_owners))
    if not paths:
        return
    r = subprocess.run(["dpkg-query", "-S"] + paths, capture_output=True, text=True)
    for p in paths:
        _owners[p] = []
    for ln in r.stdout.splitlines():
        if ln.startswith("diversion ") or ": " not in ln:
            continue
        owners, path = ln.rsplit(": ", 1)
        if path in _owners:
            _owners[path] = [o.strip() for o in owners.split(",")]


def owners_prefetch(words):
    """The owners of every candidate path of all WORDS, in one call."""
    owners_fetch([c for w in words for c in candidates(w)[1]])


def owners_of(path):
    owners_fetch([path])
    return _owners[path]


def package_of(word):
    """(package, is_base) for the program WORD on this machine, or None."""
    if word in _pkg_cache:
        return _pkg_cache[word]
    path, cands = candidates(word)
    res = None
    if path:
        for c in cands:
            owners = owners_of(c)
            if owners:
                pkg = owners[0]
                q = subprocess.run(["dpkg-query", "-W", "-f=${Essential} ${Priority}", pkg],
                                   capture_output=True, text=True).stdout.split()
                res = (pkg, "yes" in q or "required" in q)
                break
        else:
            res = ("(" + path + ", no package)", False)
    _pkg_cache[word] = res
    return res


def main():
    cmds, pkgs = listed()
    files = scripts()
    funcs = set()
    for f in files:
        for _, line in shell_lines(f):
            m = FUNC.match(line)
            if m:
                funcs.add(m.group(1))
    problems, found, uses = [], {}, []
    for f in files:
        for n, line in shell_lines(f):
            words = set(command_words(line))
            checked = set(CHECK.findall(line))
            for w in sorted(words | checked):
                if not WORD.match(w) or w in BUILTINS or w in funcs or w == "skiff":
                    continue
                found.setdefault(w, "%s:%d" % (f, n))
                if w not in cmds:
                    uses.append((f, n, w, w in checked))
    owners_prefetch({w for _, _, w, _ in uses})
    for f, n, w, is_checked in uses:
        p = package_of(w)
        if p is None:
            if is_checked:
                problems.append("%s:%d: %s: checked for, but no list installs it "
                                "(add it to tests/packages.list)" % (f, n, w))
            continue
        if p[1] or p[0] in pkgs:
            continue
        problems.append("%s:%d: %s: from package %s, which is not in "
                        "tests/packages.list and not on every Debian system"
                        % (f, n, w, p[0]))
    if "--list" in sys.argv:
        for w in sorted(found):
            p = cmds.get(w) or package_of(w)
            print("%-20s %-40s %s" % (w, p, found[w]))
    seen = set()
    for p in problems:
        key = p.split(": ", 1)[1]
        if key not in seen:
            seen.add(key)
            print(p)
    return 1 if problems else 0


sys.exit(main())
