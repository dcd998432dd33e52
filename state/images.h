#ifndef SKIFF_STATE_IMAGES_H
#define SKIFF_STATE_IMAGES_H

/*
 * The bytes of a new database of each schema that has one (struct st_schema's image):
 * made at build time by the schema's own migrations (state/mkimage.c, run by the
 * Makefile) and embedded by state/images.c. image_end - image is its size. mkimage itself
 * defines them empty: it is what makes them.
 */
extern const unsigned char st_node_image[], st_node_image_end[];

#endif
