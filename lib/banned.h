#ifndef SKIFF_BANNED_H
#define SKIFF_BANNED_H

/*
 * Functions that are too easy to misuse. Including this header last in a .c file turns
 * any use into a compile error that names the reason. Use buf_*() for strings, xsnprintf()
 * when the size is known to fit, parse_*() from util.h for numbers, and own_account() or
 * the *_r functions for the account and time lookups.
 */

#define BANNED(func) sorry_##func##_is_a_banned_function

#undef strcpy
#define strcpy(x, y) BANNED(strcpy)
#undef strcat
#define strcat(x, y) BANNED(strcat)
#undef strncpy
#define strncpy(x, y, n) BANNED(strncpy)
#undef strncat
#define strncat(x, y, n) BANNED(strncat)
#undef sprintf
#define sprintf(...) BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) BANNED(vsprintf)
#undef strtok
#define strtok(x, y) BANNED(strtok)
#undef atoi
#define atoi(x) BANNED(atoi)
#undef atol
#define atol(x) BANNED(atol)
#undef gets
#define gets(x) BANNED(gets)
#undef system
#define system(x) BANNED(system)
#undef popen
#define popen(x, y) BANNED(popen)
/* Static results that a second thread's call overwrites or frees: own_account(), *_r. */
#undef getpwuid
#define getpwuid(x) BANNED(getpwuid)
#undef getpwnam
#define getpwnam(x) BANNED(getpwnam)
#undef getgrgid
#define getgrgid(x) BANNED(getgrgid)
#undef getgrnam
#define getgrnam(x) BANNED(getgrnam)
#undef localtime
#define localtime(x) BANNED(localtime)
#undef gmtime
#define gmtime(x) BANNED(gmtime)
#undef ctime
#define ctime(x) BANNED(ctime)
#undef asctime
#define asctime(x) BANNED(asctime)

#endif
