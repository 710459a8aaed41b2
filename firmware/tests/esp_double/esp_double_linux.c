/* The linux target's flash file, as ESP-IDF's esp_partition emulates it
 * (esp_private/partition_linux.h, v5.1+): the first partition lookup maps
 * either the file named in the input control (an existing image, its own
 * size) or a new temporary `idf-partition-XXXXXX` that stays on disk until
 * esp_partition_file_munmap with remove_dump. The partition contents the
 * port reads still come from esp_double_set_partition; this part models
 * only the file's life, which is what app_main.c manages. */
#define _POSIX_C_SOURCE 200809L
#include "esp_double_linux.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "esp_double.h"

static esp_partition_file_mmap_ctrl_t ctrl_in, ctrl_act;
static int mapped;
static char tmp_dir[512] = "/tmp";

static void map_flash_file(void)
{
    if (mapped)
        return;
    ctrl_act = ctrl_in;
    if (ctrl_act.flash_file_name[0] == '\0') {
        snprintf(ctrl_act.flash_file_name, sizeof ctrl_act.flash_file_name, "%s/idf-partition-XXXXXX", tmp_dir);
        int fd = mkstemp(ctrl_act.flash_file_name);
        if (fd < 0) {
            ctrl_act.flash_file_name[0] = '\0';
            return;
        }
        size_t size = ctrl_act.flash_file_size ? ctrl_act.flash_file_size : 4096;
        if (ftruncate(fd, (off_t)size) != 0)
            size = 0;
        close(fd);
        ctrl_act.flash_file_size = size;
    }
    mapped = 1;
}

void esp_double_linux_start(const char *dir)
{
    memset(&ctrl_in, 0, sizeof ctrl_in);
    memset(&ctrl_act, 0, sizeof ctrl_act);
    mapped = 0;
    snprintf(tmp_dir, sizeof tmp_dir, "%s", dir);
    esp_double_before_find = map_flash_file;
}

esp_partition_file_mmap_ctrl_t *esp_partition_get_file_mmap_ctrl_input(void) { return &ctrl_in; }

esp_partition_file_mmap_ctrl_t *esp_partition_get_file_mmap_ctrl_act(void) { return &ctrl_act; }

esp_err_t esp_partition_file_munmap(void)
{
    if (!mapped)
        return ESP_ERR_NO_MEM;
    if (ctrl_act.remove_dump)
        unlink(ctrl_act.flash_file_name);
    mapped = 0;
    return ESP_OK;
}
