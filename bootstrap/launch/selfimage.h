#ifndef SKIFF_BOOT_SELFIMAGE_H
#define SKIFF_BOOT_SELFIMAGE_H

/*
 * This executable as the launcher sends it to nodes (bootstrap/launch/install.c copies
 * it): its bytes, the seed file that nodes which are directories here link, and the packed
 * image with its cache in $SKIFF_HOME/cache.
 */

#include <stddef.h>

/* This executable's bytes (read once) and their sha256; 0 or -errno (printed). */
int boot_self_image(const char **data, size_t *len, const char **sha);
/*
 * The same, packed (stub/pack.h: the branch filter, then zstd): made once per binary
 * (about 0.1 s) and kept in $SKIFF_HOME/cache/self-SHA.9.zst, read back (and checked) by
 * later launches; meanwhile `skiff __pack-self` makes a smaller one in the background
 * (self-SHA.19.zst), which launches use once it is there. Thread-safe.
 */
int boot_self_packed(const char **data, size_t *len);
/*
 * `skiff __pack-self SHA`: makes and keeps that smaller pack of this executable, whose
 * sha256 must be SHA; nothing when another process makes it (a lock) or it is there. 0,
 * or an error (printed).
 */
int boot_self_pack_best(const char *sha);
/*
 * The seed: $SKIFF_HOME/cache/self-SHA, a read-only file holding exactly data (this
 * executable: boot_self_image()), checked against it the first time and written anew when
 * missing or wrong (then the images and packs of other binaries that nothing links any
 * more go). Its path, to be hard-linked into nodes that are directories here; NULL when
 * there is no home or it cannot be written. Thread-safe.
 */
const char *boot_self_seed(const char *data, size_t len, const char *sha);

#endif
