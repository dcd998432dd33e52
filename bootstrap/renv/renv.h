#ifndef SKIFF_RENV_H
#define SKIFF_RENV_H

/*
 * Runtime environments: a job's Python venv (pip or uv packages), its working_dir and
 * py_modules, built on the node before the job's setup and run. docs/runtime-env.md has
 * the user's view; this header is the contract between the pieces.
 *
 *   launcher / node submit          supervisor             shim (per job)
 *   ----------------------          ----------             --------------
 *   renv_spec_from_task():          stores the renv_*      renv_job_ready(): fast path
 *   reads requirement files,        fields of the submit   (key known, env and packages
 *   hashes wheels, packs dirs       message as one blob    complete: no process started)
 *   (content-addressed) and ships   in the job's row       else `skiff __renv-build ID`
 *   them to $SKIFF_HOME/pkgs                               under setup_timeout_seconds
 *
 * Node layout under $SKIFF_HOME (all created on demand, 0700):
 *
 *   envs/<key>/            a venv, built in place; complete once .skiff-env exists in it
 *   envs/<key>.build       flock EX while building: one build per key, others wait
 *   envs/<key>.use         flock SH by every shim whose job uses the env (its refcount);
 *                          eviction takes EX non-blocking; its mtime is the last use
 *   envs/<key>.failed      "EPOCH\nmessage": a failed build, refused for failed_ttl s
 *   envs/builds.log        one line per build, failure, eviction: EPOCH WHAT KEY N
 *   envs/.py/<sha>         interpreter probe cache (realpath + stat -> sys.version)
 *   pkgs/tgz/<sha>.tar.gz  packed working_dir / py_modules, as shipped (a sync stream)
 *   pkgs/whl/<sha>/NAME    local wheels, as shipped
 *   pkgs/dir/<id>/         unpacked packages (sha of a shipped tree, or of a fetched file)
 *   pkgs/<id>.lock         flock EX while unpacking one package; SH by every job using it
 *                          (and by the build that unpacked it, until its eviction pass)
 *   downloads/             fetch_url()'s cache (https:// packages and pip entries)
 *   renv.conf              node settings (see renv_conf)
 *
 * Why in place: a venv embeds its own path (bin/activate, script shebangs), so it cannot
 * be built elsewhere and renamed. Completeness is the marker file written atomically last;
 * a dir without it is a crashed or killed build and the next builder (holding .build)
 * removes it first. Unpacked packages have no such problem: they are extracted to a temp
 * dir and renamed into place.
 */

#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"
#include "lib/env.h"

struct task;
struct msg;

#define RENV_MARKER ".skiff-env"
#define RENV_FAILED_TTL_DEFAULT 60
#define RENV_MAX_SIZE_DEFAULT ((uint64_t)10 << 30)

enum renv_tool { RENV_TOOL_NONE = 0, RENV_TOOL_PIP, RENV_TOOL_UV };

/* A string vector that owns its strings. */
struct renv_strv {
	char **v;
	size_t n;
};
void renv_strv_push(struct renv_strv *s, const char *str);
void renv_strv_release(struct renv_strv *s);

/*
 * What the node needs to build a job's environment. Every local file has been replaced by
 * its content: requirement files are inlined, wheels and dirs are named by sha256.
 */
struct renv_spec {
	int set;
	char *python;              /* interpreter path, version ("3.12") or name; NULL: python3 */
	int tool;                  /* enum renv_tool */
	struct renv_strv pkgs;     /* requirement lines (packages and inlined files, as given) */
	struct renv_strv wheels;   /* "SHA256 NAME.whl": in pkgs/whl/SHA256/NAME.whl */
	struct renv_strv urls;     /* https:// pip entries (a "#sha256=HEX" suffix pins) */
	struct renv_strv opts;     /* uv_pip_install_options */
	int check;                 /* pip_check / uv_check */
	char *tool_version;        /* pip_version / uv_version, e.g. "==23.0.1" */
	char *working_dir;         /* "sha256:HEX" (shipped) or an https:// URL; NULL */
	struct renv_strv modules;  /* py_modules, same forms */
	struct renv_strv env_vars; /* "K=V" */
	long timeout;              /* setup_timeout_seconds; -1: none */
};

void renv_spec_release(struct renv_spec *s);
/* 1 if the spec asks for a venv (pip or uv packages, or an explicit python). */
int renv_spec_wants_venv(const struct renv_spec *s);

/* --- the spec on the wire and in the job's row (bootstrap/renv/renv_spec.c) ---------------- */

/* Appends the spec as renv_* fields to a submit message. */
int renv_spec_to_msg(const struct renv_spec *s, struct msg *m);
/* Reads the renv_* fields of m; s->set is 0 when there are none. */
int renv_spec_from_msg(struct renv_spec *s, const struct msg *m);
/* The job row's blob: the renv_* fields of the request, as the supervisor stored them. */
int renv_spec_from_blob(struct renv_spec *s, const char *blob, size_t len);

/*
 * The launcher's side: turns t->runtime_env into a spec. Relative paths are relative to
 * the current directory (Ray's rule). Requirement files are read (and `-r FILE` lines in
 * them inlined), local wheels hashed, local dirs packed into the local store `store`
 * (a directory: tgz/<sha>.tar.gz, whl/<sha>/NAME), skipping what is already there.
 * `ship` gets one "RELPATH" per file of the store the node needs (relative to store).
 * Errors name the field and the file.
 */
int renv_spec_from_task(const struct task *t, const char *store, struct renv_spec *s,
                        struct renv_strv *ship);

/* --- the cache key (bootstrap/renv/renv_key.c, pure) --------------------------------------- */

/*
 * sha256 over the canonical text of what determines the venv:
 *   the tool, the interpreter's identity (python_id: its real path, sys.version and
 *   machine, from the node), the requirement lines normalised (PEP 503 names, no
 *   whitespace in version specifiers, comments dropped) sorted and de-duplicated, wheel
 *   digests (the bytes, not the names), URLs, the check flag, the tool version, install
 *   options, and the node's index settings (pip_conf).
 * Not in it: config (timeouts), env_vars, working_dir, py_modules. canon (may be NULL)
 * gets the text.
 */
int renv_key(const struct renv_spec *s, const char *python_id, const char *pip_conf, char hex[65],
             struct buf *canon);
/* One requirement line in canonical form, appended to out ("" for a comment/blank). */
void renv_norm_req(const char *line, struct buf *out);

/* --- node settings and the cache (bootstrap/renv/renv_cache.c) ----------------------------- */

struct renv_conf {
	struct renv_strv index_args; /* pip/uv flags: --index-url X, --find-links Y, ... */
	uint64_t max_size;           /* bytes of envs before LRU eviction */
	long failed_ttl;             /* seconds a failed build is remembered */
	int serial;                  /* 1: unpack packages after the venv, not beside it */
	char *ca_file;               /* for https:// packages; NULL: fetch's default */
};

/*
 * Reads $home/renv.conf ("key = value" lines: index_url, extra_index_url, find_links,
 * no_index, max_size_mb, failed_ttl_seconds, parallel, ca_file), then the environment
 * (SKIFF_PIP_INDEX_URL, SKIFF_PIP_EXTRA_INDEX_URL, SKIFF_PIP_FIND_LINKS,
 * SKIFF_PIP_NO_INDEX, SKIFF_RENV_MAX_SIZE_MB, SKIFF_RENV_CA_FILE) which overrides it.
 */
int renv_conf_load(const char *home, struct renv_conf *c);
void renv_conf_release(struct renv_conf *c);
/*
 * Sets (or unsets) in env the settings' variables as this process has them: the builder
 * runs in the job's environment but must see the node's settings the shim saw.
 */
void renv_conf_env_copy(struct env *env);
/* The index settings as one text for the key. */
void renv_conf_pip_text(const struct renv_conf *c, struct buf *out);

/* An interpreter found for a spec. */
struct renv_py {
	char *path;    /* the candidate that answered (as found; a venv is made from it) */
	char *id;      /* identity for the key: real path, sys.version, machine */
	char *version; /* "3.11.2" */
	char *pip;     /* its pip's version, "" when it has none */
};
void renv_py_release(struct renv_py *py);

/*
 * Finds the interpreter for `want` (see struct renv_spec.python) in path_env's dirs and
 * the usual places (/usr/local/bin, /usr/bin, ~/.pyenv/versions/V*, uv's pythons). With
 * probe, candidates are run once and the answer cached in envs/.py (keyed by path and
 * stat); without, only cached answers count and 1 is returned when a candidate has not
 * been probed yet. A missing interpreter is -ENOENT with every place searched in err.
 */
int renv_python(const char *home, const char *want, const char *path_env, int probe,
                struct renv_py *out, struct buf *err);

/* Opens (creating) a lock file and flocks it (LOCK_SH/LOCK_EX, | LOCK_NB); fd or -errno. */
int renv_lock(const char *path, int op);
/* A fresh failure of key: 1 and the message in msg; 0 when none. */
int renv_failed_get(const char *home, const char *key, long ttl, struct buf *msg);
int renv_failed_set(const char *home, const char *key, const char *msg);
/* Appends "EPOCH WHAT KEY N" to envs/builds.log (what: build, failed, evict). */
void renv_log(const char *home, const char *what, const char *key, uint64_t n);
/* Bytes under path (no symlinks followed). */
uint64_t renv_du(const char *path);
/*
 * Evicts complete envs and unpacked packages, least recently used first, while their
 * total is above max_size; one whose lock (envs/<key>.use, pkgs/<id>.lock) is held by a
 * running job or a build is never touched. Logs what it removes.
 */
int renv_evict(const char *home, uint64_t max_size, const char *keep_key);

/* --- packages (bootstrap/renv/renv_pack.c) -------------------------------------------------- */

/* Content hash of a dir as the sync walk sees it (ignore files honoured). */
int renv_tree_hash(const char *dir, char hex[65]);
/* Packs dir into path (a gzipped sync stream), atomically. */
int renv_pack_dir(const char *dir, const char *path);
/* Unpacks pkgs/tgz/SHA.tar.gz or a fetched archive into pkgs/dir/ID (idempotent). */
int renv_pkg_ensure(const char *home, const char *ref, const struct renv_conf *c, char **dir,
                    struct buf *err);
/* The unpacked dir of a ref if it is complete, else NULL. */
char *renv_pkg_ready(const char *home, const char *ref);
/*
 * renv_pkg_ready() plus the package's use lock (pkgs/<id>.lock, shared, touched): the fd
 * (the caller keeps it while it uses the dir) and *dir, or -ENOENT when not ready.
 */
int renv_pkg_hold(const char *home, const char *ref, char **dir);
/* fetch_url() into $home/downloads; "URL#sha256=HEX" pins the digest. */
int renv_fetch(const char *home, const char *ref, const struct renv_conf *c, char **file,
               struct buf *err);

/* --- the job's side (bootstrap/renv/renv_job.c) -------------------------------------------- */

struct renv_job {
	struct renv_spec spec;
	char key[65];             /* "" when the spec needs no venv */
	char *venv;               /* envs/<key> */
	char *working_dir;        /* unpacked working_dir, or NULL */
	struct renv_strv modules; /* unpacked py_modules */
	int use_fd;               /* the shared .use lock, held for the job's life; -1 */
	int *pkg_fds;             /* the packages' shared locks, likewise */
	size_t npkg_fds;
};

void renv_job_init(struct renv_job *j);
void renv_job_release(struct renv_job *j);
/*
 * The shim's fast path: 1 when everything is ready (use lock taken), 0 when a build is
 * needed, or -errno with the reason in err (a remembered failure, a bad spec).
 */
int renv_job_ready(struct renv_job *j, const char *home, const char *path_env, struct buf *err);
/* Activates the env in a child's environment: VIRTUAL_ENV, PATH, PYTHONPATH, env_vars. */
void renv_job_apply(const struct renv_job *j, struct env *env);

/* `skiff __renv-build JOB_ID`: builds what the job's spec needs; exit 0 or 1. */
int renv_build_main(int64_t job_id, const char *home, const char *log_dir,
                    const struct renv_spec *s);
/* The step a build is in, read from LOG_DIR/renv.step ("" if unknown). */
void renv_step_get(const char *log_dir, char *out, size_t size);

#endif
