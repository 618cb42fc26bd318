/* One row of a layout report: a struct's size (field "") or one field's offset and size. */
#ifndef SWITCHYARD_TEST_LAYOUT_PROBE_H
#define SWITCHYARD_TEST_LAYOUT_PROBE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct layout_field {
  const char* type;
  const char* field; /* "" for the row holding sizeof(type) */
  size_t offset;
  size_t size;
} layout_field;

/* One pair per compiled probe: layout_<tag>_fields and layout_<tag>_minor. */
#define LAYOUT_DECLARE(tag)                                    \
  const layout_field* layout_##tag##_fields(size_t* count);    \
  int layout_##tag##_minor(void);

LAYOUT_DECLARE(v1_0)
LAYOUT_DECLARE(current)
LAYOUT_DECLARE(v1_9)

#ifdef __cplusplus
}
#endif

#endif
