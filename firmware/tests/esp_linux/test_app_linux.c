/* app_main.c built for ESP-IDF's linux target, on the double: the flash
 * file's life (docs/esp32s3.md, linux target) and the clock. This binary is
 * linked without esp_timer_get_time (ESP-IDF before v6 has none on linux):
 * that it links at all is the clock's test. Built once per ESP-IDF header
 * shape (esp32s3/port.mk). */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "esp_double.h"
#include "esp_double_linux.h"
#include "rvne/status.h"
#include "temporal_task.h"

void app_main(void);

static char dir[400];
static int console_in[2], console_out[2];

/* stdin/stdout become pipes: the app sets its input non-blocking and must
 * not do that to whoever started the test. */
static void console_to_pipes(void)
{
    if (pipe(console_in) != 0 || pipe(console_out) != 0 || dup2(console_in[0], 0) < 0 ||
        dup2(console_out[1], 1) < 0) {
        fprintf(stderr, "cannot make the console pipes\n");
        exit(2);
    }
    fcntl(console_out[0], F_SETFL, O_NONBLOCK);
}

static size_t console_read(char *buf, size_t cap)
{
    ssize_t n = read(console_out[0], buf, cap - 1);
    buf[n > 0 ? n : 0] = '\0';
    return n > 0 ? (size_t)n : 0;
}

static int temporary_flash_files(void)
{
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL)
        n += strncmp(e->d_name, "idf-partition-", 14) == 0;
    if (d != NULL)
        closedir(d);
    return n;
}

static const char *erased_file(const char *name)
{
    static char path[512];
    static unsigned char img[8192];
    memset(img, 0xFF, sizeof img);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(img, 1, sizeof img, f) != sizeof img) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
    fclose(f);
    return path;
}

static void boot(void)
{
    temporal_task_deinit();
    esp_double_reset();
    esp_double_linux_start(dir);
    esp_double_set_partition("rvne", 0x01, 0x40, erased_file("rvne.part"));
    app_main();
}

/* No image: ESP-IDF makes a temporary flash file; the app unlinks it once
 * mapped, so a killed run leaves nothing in /tmp. */
static void test_temporary_flash_file_is_not_left_behind(void)
{
    unsetenv("RVNE_FLASH_IMAGE");
    boot();
    const esp_partition_file_mmap_ctrl_t *act = esp_partition_get_file_mmap_ctrl_act();
    CHECK(strstr(act->flash_file_name, "/idf-partition-") != NULL);
    CHECK(access(act->flash_file_name, F_OK) != 0 && errno == ENOENT);
    CHECK_EQ(temporary_flash_files(), 0);
    CHECK_STATUS(temporal_task_load_status(), RVNE_E_ERASED);
    CHECK(esp_double_task_get()->created);

    char out[4096];
    temporal_task_step(0);
    console_read(out, sizeof out);
    CHECK(strstr(out, "idf-linux") != NULL);
    CHECK(strstr(out, "E_ERASED") != NULL);
}

/* An image: used by name, never deleted, no temporary file made. */
static void test_image_is_used_and_kept(void)
{
    const char *image = erased_file("flash.img");
    char keep[512];
    snprintf(keep, sizeof keep, "%s", image);
    setenv("RVNE_FLASH_IMAGE", keep, 1);
    boot();
    CHECK(strcmp(esp_partition_get_file_mmap_ctrl_input()->flash_file_name, keep) == 0);
    CHECK(strcmp(esp_partition_get_file_mmap_ctrl_act()->flash_file_name, keep) == 0);
    CHECK(esp_partition_get_file_mmap_ctrl_input()->remove_dump == 0);
    CHECK_EQ(access(keep, F_OK), 0);
    CHECK_EQ(temporary_flash_files(), 0);
}

/* A name longer than the control's buffer: said, and an erased flash used
 * (whose temporary file is then not left either). */
static void test_too_long_image_name(void)
{
    static char longname[5000];
    memset(longname, 'a', sizeof longname - 1);
    setenv("RVNE_FLASH_IMAGE", longname, 1);
    boot();
    char out[4096];
    console_read(out, sizeof out);
    CHECK(strstr(out, "RVNE_FLASH_IMAGE is longer than") != NULL);
    CHECK(esp_partition_get_file_mmap_ctrl_input()->flash_file_name[0] == '\0');
    CHECK_EQ(temporary_flash_files(), 0);
    unsetenv("RVNE_FLASH_IMAGE");
}

int main(int argc, char **argv)
{
    /* A fresh directory, so counting idf-partition-* files sees this run's. */
    snprintf(dir, sizeof dir, "%s/app-linux-XXXXXX", argc > 1 ? argv[1] : ".");
    if (mkdtemp(dir) == NULL) {
        fprintf(stderr, "cannot make a directory in %s\n", argc > 1 ? argv[1] : ".");
        return 2;
    }
    console_to_pipes();
    test_temporary_flash_file_is_not_left_behind();
    test_image_is_used_and_kept();
    test_too_long_image_name();
    temporal_task_deinit();
    char path[512];
    snprintf(path, sizeof path, "%s/rvne.part", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/flash.img", dir);
    unlink(path);
    rmdir(dir);
    return CHECK_DONE("test_app_linux");
}
