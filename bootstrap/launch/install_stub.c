/*
 * The self-copy's stubs (bootstrap/launch/stub/), built by the Makefile before this file
 * and embedded here as they are: install.c sends them to a new node ahead of skiff.
 */
#include "bootstrap/launch/install.h"

#ifndef SKIFF_STUB_DIR
#error "SKIFF_STUB_DIR: the Makefile builds this file with the stubs' directory"
#endif

__asm__(".section .rodata.skiff_stubs,\"a\"\n"
        ".balign 16\n"
        "boot_stub_split_start:\n"
        ".incbin \"" SKIFF_STUB_DIR "/skiff-split\"\n"
        "boot_stub_split_end:\n"
        ".balign 16\n"
        "boot_stub_unzstd_start:\n"
        ".incbin \"" SKIFF_STUB_DIR "/skiff-unzstd\"\n"
        "boot_stub_unzstd_end:\n"
        ".previous\n");

extern const unsigned char boot_stub_split_start[], boot_stub_split_end[];
extern const unsigned char boot_stub_unzstd_start[], boot_stub_unzstd_end[];

void boot_stubs(struct boot_stub *split, struct boot_stub *unzstd)
{
	split->data = boot_stub_split_start;
	split->len = (size_t)(boot_stub_split_end - boot_stub_split_start);
	unzstd->data = boot_stub_unzstd_start;
	unzstd->len = (size_t)(boot_stub_unzstd_end - boot_stub_unzstd_start);
}
