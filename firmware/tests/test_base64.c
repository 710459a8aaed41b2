/* rvne_base64: the test vectors of RFC 4648 section 10, the strictness rules
 * (padding, stray bits, alphabet), buffer limits, and the incremental
 * encoder against the one-shot one over random lengths and cuts. */
#include <stdint.h>
#include <string.h>
#include "check.h"
#include "rvne/base64.h"
#include "rvne/status.h"

static uint32_t rng_state = 0x2545F491u;

static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

static void test_rfc_vectors(void)
{
    static const char *const plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const coded[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    char out[16];
    uint8_t back[16];
    size_t i;
    for (i = 0; i < 7; i++) {
        size_t pn = strlen(plain[i]), cn = strlen(coded[i]);
        long n = rvne_b64_encode(out, sizeof out, (const uint8_t *)plain[i], pn);
        CHECK_EQ(n, cn);
        CHECK(n >= 0 && memcmp(out, coded[i], cn) == 0);
        CHECK_EQ(rvne_b64_encoded_len(pn), cn);
        CHECK_EQ(rvne_b64_decoded_len(coded[i], cn), pn);
        n = rvne_b64_decode(back, sizeof back, coded[i], cn);
        CHECK_EQ(n, pn);
        CHECK(n >= 0 && memcmp(back, plain[i], pn) == 0);
    }
    /* Every byte value and the two characters that differ from base64url. */
    {
        const uint8_t bin[3] = {0xFB, 0xFF, 0xBF};
        CHECK_EQ(rvne_b64_encode(out, sizeof out, bin, 3), 4);
        CHECK(memcmp(out, "+/+/", 4) == 0);
        CHECK_EQ(rvne_b64_decode(back, sizeof back, "+/+/", 4), 3);
        CHECK(memcmp(back, bin, 3) == 0);
    }
}

static void test_strict(void)
{
    static const char *const bad[] = {
        "Zg=",      /* not a multiple of 4 */
        "Zg",       /* unpadded */
        "Zh==",     /* stray bits under the padding */
        "Zm9=",     /* stray bits, one pad */
        "Z===",     /* three pads */
        "====",
        "Zg==Zg==", /* padding in the middle */
        "Zm 9",     /* whitespace */
        "Zm9\n",
        "Zm-_",     /* base64url alphabet */
        "Zm9v\0\0\0\0",
        "=Zm9",
        "Z=m9",
    };
    uint8_t out[16];
    size_t i;
    memset(out, 0xAA, sizeof out);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t n = (i == 10) ? 8u : strlen(bad[i]);
        CHECK_EQ(rvne_b64_decoded_len(bad[i], n), RVNE_B64_E_SYNTAX);
        CHECK_EQ(rvne_b64_decode(out, sizeof out, bad[i], n), RVNE_B64_E_SYNTAX);
    }
    for (i = 0; i < sizeof out; i++) CHECK_EQ(out[i], 0xAA); /* untouched on error */
    /* Every single character: exactly the 64 of the alphabet decode. */
    {
        int c, good = 0;
        for (c = 0; c < 256; c++) {
            char text[4] = {(char)c, 'A', 'A', 'A'};
            if (rvne_b64_decode(out, sizeof out, text, 4) == 3) good++;
        }
        CHECK_EQ(good, 64);
    }
}

static void test_limits(void)
{
    char out[8];
    uint8_t back[2];
    memset(out, 'x', sizeof out);
    CHECK_EQ(rvne_b64_encode(out, 7, (const uint8_t *)"foob", 4), RVNE_B64_E_SPACE);
    CHECK_EQ(out[0], 'x');
    CHECK_EQ(rvne_b64_encode(out, 8, (const uint8_t *)"foob", 4), 8);
    CHECK_EQ(rvne_b64_decode(back, 2, "Zm9v", 4), RVNE_B64_E_SPACE);
    CHECK_EQ(rvne_b64_decode(back, 2, "Zm8=", 4), 2);
    CHECK_EQ(rvne_b64_encoded_len((size_t)-1), 0); /* would not fit size_t */
}

/* Random data: one-shot and incremental encoders agree, decoding gives the
 * data back, and an incremental encoder that runs out of room says so. */
static void test_round_trip(void)
{
    static uint8_t data[300], back[300];
    static char one[400], inc[400];
    size_t len, i;
    for (len = 0; len <= 300; len++) {
        rvne_b64_enc e;
        long n1, n2;
        size_t off = 0;
        for (i = 0; i < len; i++) data[i] = (uint8_t)rng();
        n1 = rvne_b64_encode(one, sizeof one, data, len);
        CHECK_EQ(n1, rvne_b64_encoded_len(len));
        rvne_b64_enc_start(&e, inc, sizeof inc);
        while (off < len) {
            size_t k = rng() % 5u;
            if (k > len - off) k = len - off;
            rvne_b64_enc_feed(&e, data + off, k);
            off += k;
        }
        n2 = rvne_b64_enc_finish(&e);
        CHECK_EQ(n2, n1);
        CHECK(n1 >= 0 && n1 == n2 && memcmp(one, inc, (size_t)n1) == 0);
        CHECK_EQ(rvne_b64_decode(back, sizeof back, one, (size_t)n1), len);
        CHECK(memcmp(back, data, len) == 0);
        if (n1 >= 4) {
            rvne_b64_enc_start(&e, inc, (size_t)n1 - 1);
            rvne_b64_enc_feed(&e, data, len);
            CHECK_EQ(rvne_b64_enc_finish(&e), RVNE_B64_E_SPACE);
            CHECK(e.len <= (size_t)n1 - 1);
        }
    }
}

int main(void)
{
    test_rfc_vectors();
    test_strict();
    test_limits();
    test_round_trip();
    return CHECK_DONE("test_base64");
}
