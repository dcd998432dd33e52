#ifndef SKIFF_LOCK_H
#define SKIFF_LOCK_H

/*
 * Exclusive advisory locks on files (flock(2)). The kernel lets go of one when its holder
 * dies, so a lock is never stale and nothing has to clean up after a crash. The file keeps
 * its holder's pid and what it does, for the message a waiter prints; the file itself is
 * never removed (removing it would let two holders lock two different files).
 *
 * flock() locks belong to an open file: a process that takes the same lock twice waits
 * for itself. Take each lock once, at the outermost level.
 */

enum lock_flags {
	LOCK_TAKE_WAIT = 1 << 0, /* wait for the holder (saying once who it is) instead of -EBUSY */
};

/*
 * Takes the lock at path (created 0600, with its directory's parents), recording `what`
 * ("skiff launch", ...) for waiters. Returns the fd to close to let go, or -EBUSY when it
 * is held and LOCK_TAKE_WAIT is not given, or another error (printed). `subject` names what is
 * locked in the waiting message ("cluster c1").
 */
int lock_take(const char *path, const char *subject, const char *what, unsigned flags);
/* Lets go (fd < 0: nothing). */
void lock_release(int fd);

#endif
