/* Decoding real files against Pillow: every PNG and JPEG that skimage and darknet ship (Debian
 * python3-skimage, darknet), plus synthetic progressive, grayscale and EXIF-rotated JPEGs that
 * Pillow writes. PNG pixels must equal Pillow's exactly; JPEG pixels within one level (both
 * use the system libjpeg-turbo with its default islow IDCT and fancy upsampling, so they agree
 * exactly in practice). The Pillow side is tests/unit/pillow_reference.py. */
#include "data/image.h"

#include <glob.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#define SKIMAGE_DATA "/usr/lib/python3/dist-packages/skimage/data"
#define DARKNET_DATA "/usr/share/darknet/data"
#define PYTHON "/usr/bin/python3"

static char repo[PATH_MAX], tmpdir[64];

/* The checkout holding this binary (REPO/build/{rel,san}/tests/test_decode). */
static int find_repo(void)
{
    ssize_t n = readlink("/proc/self/exe", repo, sizeof repo - 1);
    if (n <= 0) {
        return -1;
    }
    repo[n] = 0;
    for (int up = 0; up < 4; up++) {
        char *slash = strrchr(repo, '/');
        if (!slash) {
            return -1;
        }
        *slash = 0;
    }
    return 0;
}

/* Runs pillow_reference.py MODE DIR FILES... (files NULL-terminated). */
static int run_pillow(const char *mode, char *const *files)
{
    size_t cap = 4096, len = 0;
    char *cmd = malloc(cap);
    len += (size_t)snprintf(cmd, cap, "%s '%s/tests/unit/pillow_reference.py' %s '%s'", PYTHON,
                            repo, mode, tmpdir);
    for (int i = 0; files && files[i]; i++) {
        if (len + strlen(files[i]) + 4 >= cap) {
            cap = 2 * (len + strlen(files[i]) + 4);
            cmd = realloc(cmd, cap);
        }
        len += (size_t)sprintf(cmd + len, " '%s'", files[i]);
    }
    int status = system(cmd);
    free(cmd);
    return status;
}

static const char *tmp_path(char *buf, const char *name)
{
    snprintf(buf, PATH_MAX, "%s/%s", tmpdir, name);
    return buf;
}

/* Pillow's pixels of one file (see pillow_reference.py). */
typedef struct Reference {
    int c, h, w, maxval;
    uint16_t *v; /* [c][h][w] */
} Reference;

static int read_reference(const char *path, Reference *r)
{
    memset(r, 0, sizeof *r);
    FILE *f = fopen(path, "rb");
    if (!f) {
        return -1;
    }
    int ok = fscanf(f, "%d %d %d %d", &r->c, &r->h, &r->w, &r->maxval) == 4 && fgetc(f) == '\n';
    size_t n = ok ? (size_t)r->c * r->h * r->w : 0;
    r->v = ok ? malloc(n * sizeof *r->v) : NULL;
    ok = r->v && fread(r->v, sizeof *r->v, n, f) == n; /* little-endian host */
    fclose(f);
    return ok ? 0 : -1;
}

/* Decodes path with cdl and checks it against reference i: same shape and every sample within
   tol levels (of maxval). Prints the file and the worst difference when not. */
static void check_against_pillow(const char *path, int i, int tol)
{
    char ref_path[PATH_MAX], name[32];
    snprintf(name, sizeof name, "%d.ref", i);
    Reference r;
    Image img;
    Error e = {0};
    CHECK(read_reference(tmp_path(ref_path, name), &r) == 0);
    int rc = image_load(path, &img, &e);
    CHECK(rc == CDL_OK);
    if (rc != CDL_OK || !r.v) {
        fprintf(stderr, "  %s: %s\n", path, e.msg);
        free(r.v);
        return;
    }
    CHECK(img.c == r.c && img.h == r.h && img.w == r.w);
    if (img.c == r.c && img.h == r.h && img.w == r.w) {
        size_t n = (size_t)r.c * r.h * r.w, differing = 0;
        double worst = 0;
        for (size_t k = 0; k < n; k++) {
            double diff = fabs(img.data[k] * r.maxval - r.v[k]);
            worst = diff > worst ? diff : worst;
            differing += diff > 0.5;
        }
        CHECK(worst <= tol + 0.01);
        if (worst > tol + 0.01) {
            fprintf(stderr, "  %s: %zu of %zu samples differ, by up to %.2f levels\n", path,
                    differing, n, worst);
        }
    } else {
        fprintf(stderr, "  %s: cdl %dx%dx%d, Pillow %dx%dx%d\n", path, img.c, img.h, img.w, r.c,
                r.h, r.w);
    }
    image_free(&img);
    free(r.v);
}

/* Compares every file matched by the patterns with Pillow at tolerance tol. */
static void check_files_against_pillow(const char *const *patterns, int tol)
{
    glob_t g = {0};
    for (int i = 0; patterns[i]; i++) {
        glob(patterns[i], i ? GLOB_APPEND : 0, NULL, &g);
    }
    /* skimage's truncated.jpg is a decoding error for both (test_truncated_jpeg_...). */
    char **files = calloc(g.gl_pathc + 1, sizeof *files);
    size_t n = 0;
    for (size_t i = 0; files && i < g.gl_pathc; i++) {
        if (!strstr(g.gl_pathv[i], "truncated")) {
            files[n++] = g.gl_pathv[i];
        }
    }
    CHECK(n >= 3); /* the packages are installed (scripts/deps.sh) */
    CHECK(run_pillow("ref", files) == 0);
    for (size_t i = 0; i < n; i++) {
        check_against_pillow(files[i], (int)i, tol);
    }
    free(files);
    globfree(&g);
}

static void test_png_files_equal_pillow_exactly(void)
{
    const char *patterns[] = {SKIMAGE_DATA "/*.png", NULL};
    check_files_against_pillow(patterns, 0);
}

static void test_jpeg_files_are_within_one_level_of_pillow(void)
{
    const char *patterns[] = {SKIMAGE_DATA "/*.jpg", DARKNET_DATA "/*.jpg", NULL};
    check_files_against_pillow(patterns, 1);
}

/* Compares the synthetic files (written by `pillow_reference.py synth`) with Pillow. */
static void check_synthetic_against_pillow(const char *const *names, int tol)
{
    char paths[16][PATH_MAX];
    char *files[17] = {0};
    int n = 0;
    for (; names[n]; n++) {
        files[n] = (char *)tmp_path(paths[n], names[n]);
    }
    CHECK(run_pillow("ref", files) == 0);
    for (int i = 0; i < n; i++) {
        check_against_pillow(files[i], i, tol);
    }
}

static void test_progressive_subsampled_jpeg_matches_pillow(void)
{
    const char *names[] = {"progressive.jpg", NULL};
    check_synthetic_against_pillow(names, 1);
}

static void test_grayscale_jpegs_give_one_channel_matching_pillow(void)
{
    const char *names[] = {"gray.jpg", "gray_progressive.jpg", NULL};
    check_synthetic_against_pillow(names, 1);
    char p[PATH_MAX];
    Image img;
    Error e = {0};
    CHECK(image_load(tmp_path(p, "gray_progressive.jpg"), &img, &e) == CDL_OK && img.c == 1);
    image_free(&img);
}

static void test_exif_orientations_match_pillow_exif_transpose(void)
{
    const char *names[] = {"orient_1.jpg", "orient_2.jpg", "orient_3.jpg",
                           "orient_4.jpg", "orient_5.jpg", "orient_6.jpg",
                           "orient_7.jpg", "orient_8.jpg", NULL};
    check_synthetic_against_pillow(names, 1);
}

/* The eight files hold the same compressed pixels, so each must decode to an exact flip or
   rotation of orientation 1's: stored pixel (x, y) of a w x h picture lands at the position
   derived from the EXIF definition of each orientation. */
static void test_exif_orientation_moves_stored_pixels(void)
{
    char p[PATH_MAX];
    Image stored, img;
    Error e = {0};
    CHECK(image_load(tmp_path(p, "orient_1.jpg"), &stored, &e) == CDL_OK);
    const int w = stored.w, h = stored.h;
    CHECK(w == 24 && h == 16);
    for (int orientation = 2; orientation <= 8; orientation++) {
        char name[32];
        snprintf(name, sizeof name, "orient_%d.jpg", orientation);
        CHECK(image_load(tmp_path(p, name), &img, &e) == CDL_OK);
        int swapped = orientation >= 5;
        CHECK(img.w == (swapped ? h : w) && img.h == (swapped ? w : h) && img.c == 3);
        int mismatches = 0;
        for (int ch = 0; ch < 3 && img.w == (swapped ? h : w); ch++) {
            for (int y = 0; y < h; y++) {
                for (int x = 0; x < w; x++) {
                    int dx[9] = {0, x, w - 1 - x, w - 1 - x, x, y, h - 1 - y, h - 1 - y, y};
                    int dy[9] = {0, y, y, h - 1 - y, h - 1 - y, x, x, w - 1 - x, w - 1 - x};
                    float want = stored.data[((size_t)ch * h + y) * w + x];
                    float got =
                        img.data[((size_t)ch * img.h + dy[orientation]) * img.w + dx[orientation]];
                    mismatches += got != want;
                }
            }
        }
        CHECK(mismatches == 0);
        image_free(&img);
    }
    image_free(&stored);
}

static void test_exif_big_endian_orientation_is_read(void)
{
    char p[PATH_MAX];
    Image le, be;
    Error e = {0};
    CHECK(image_load(tmp_path(p, "orient_6.jpg"), &le, &e) == CDL_OK);
    CHECK(image_load(tmp_path(p, "orient_6_mm.jpg"), &be, &e) == CDL_OK);
    CHECK(be.w == 16 && be.h == 24 && be.w == le.w && be.h == le.h);
    if (be.w == le.w && be.h == le.h) {
        CHECK(!memcmp(be.data, le.data, (size_t)3 * be.h * be.w * sizeof *be.data));
    }
    image_free(&le);
    image_free(&be);
}

static void test_truncated_jpeg_error_names_the_file(void)
{
    const char *path = SKIMAGE_DATA "/truncated.jpg";
    Image img;
    Error e = {0};
    CHECK(image_load(path, &img, &e) == CDL_ERUNTIME);
    CHECK_CONTAINS(e.msg, path);
    CHECK_CONTAINS(e.msg, "corrupt or truncated JPEG");
    CHECK(img.data == NULL);
}

/* 16385 x 16385 would need 3.2 GB of floats; the header alone must refuse it. */
static void test_jpeg_over_the_size_limit_is_refused_from_its_header(void)
{
    char p[PATH_MAX];
    Image img;
    Error e = {0};
    CHECK(image_load(tmp_path(p, "huge_header.jpg"), &img, &e) == CDL_ERUNTIME);
    CHECK_CONTAINS(e.msg, "too large (16385x16385");
    CHECK(img.data == NULL);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/cdl-decode-XXXXXX");
    if (!mkdtemp(tmpdir) || find_repo() != 0) {
        fprintf(stderr, "cannot create a temp dir or find the checkout\n");
        return 1;
    }
    CHECK(run_pillow("synth", NULL) == 0);
    test_png_files_equal_pillow_exactly();
    test_jpeg_files_are_within_one_level_of_pillow();
    test_progressive_subsampled_jpeg_matches_pillow();
    test_grayscale_jpegs_give_one_channel_matching_pillow();
    test_exif_orientations_match_pillow_exif_transpose();
    test_exif_orientation_moves_stored_pixels();
    test_exif_big_endian_orientation_is_read();
    test_truncated_jpeg_error_names_the_file();
    test_jpeg_over_the_size_limit_is_refused_from_its_header();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    CHECK(system(cmd) == 0);
    return check_report("test_decode");
}
