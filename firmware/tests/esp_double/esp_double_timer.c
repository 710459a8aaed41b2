/* esp_timer_get_time of the double, in its own object: the chip builds link
 * it, the linux-target builds must not need it (ESP-IDF before v6 has no
 * esp_timer on linux), so their test binaries are linked without it. */
#include "esp_double.h"
#include "esp_timer.h"

int64_t esp_timer_get_time(void)
{
    esp_double_counts *c = esp_double_counts_get();
    int64_t t = c->now_us;
    c->now_us += 7;             /* every reading moves time on, so spans are > 0 */
    return t;
}
