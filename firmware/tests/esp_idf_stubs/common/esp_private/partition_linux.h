/* v5.1+ components/esp_partition/include/esp_private/partition_linux.h, the
 * linux target's flash-file control: which file backs the emulated flash
 * (an existing one, used at its own size, or a new temporary one), and
 * whether it is deleted at esp_partition_file_munmap. Implemented by the
 * test double (esp_double.c). */
#ifndef STUB_PARTITION_LINUX_H
#define STUB_PARTITION_LINUX_H
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include "esp_err.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

typedef struct {
    char flash_file_name[PATH_MAX];
    size_t flash_file_size;
    char partition_file_name[PATH_MAX];
    bool remove_dump;
} esp_partition_file_mmap_ctrl_t;

/* What the next mapping will use; set before the first esp_partition call. */
esp_partition_file_mmap_ctrl_t *esp_partition_get_file_mmap_ctrl_input(void);
/* What the current mapping uses (the temporary file's name included). */
esp_partition_file_mmap_ctrl_t *esp_partition_get_file_mmap_ctrl_act(void);
esp_err_t esp_partition_file_munmap(void);
#endif
