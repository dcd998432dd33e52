/*
 * The new-database images (state/images.h), embedded as state/mkimage.c wrote them
 * (.incbin; SKIFF_IMAGE_DIR is the build's gen/ folder, and the Makefile makes this object
 * depend on the files). Not in libskiff.a: mkimage links that library to make them.
 */
#include "state/images.h"

#ifndef SKIFF_IMAGE_DIR
#error "SKIFF_IMAGE_DIR: the folder of the images (the Makefile gives it)"
#endif

__asm__(".section .rodata.skiff_images,\"a\"\n"
        ".globl st_node_image\n"
        ".globl st_node_image_end\n"
        ".balign 16\n"
        "st_node_image:\n"
        ".incbin \"" SKIFF_IMAGE_DIR "/node.db\"\n"
        "st_node_image_end:\n"
        ".previous\n");
