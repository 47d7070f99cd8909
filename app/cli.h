/*
 * cli.h - private to the f3dbench program: subcommand entry points and the small helpers they share
 * (error printing, size and list parsing, git and build context).
 *
 * Every subcommand is `int f3d_cmd_<name>(int argc, char **argv)`: argv[0] is "f3dbench: <name>" (so that
 * getopt's own messages read as every error line does), options are parsed with getopt_long, `--help` prints
 * usage on stdout and returns 0, a usage error returns 2 and any other failure 1, with "f3dbench: <what>: <why>"
 * on stderr.
 */
#ifndef F3D_CLI_H
#define F3D_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "harness/harness.h"

/* ---- subcommands (one line each; the dispatch table is in f3dbench.c) ---- */
int f3d_cmd_info(int argc, char **argv);
int f3d_cmd_gen(int argc, char **argv);
int f3d_cmd_sweep(int argc, char **argv);
int f3d_cmd_serialize(int argc, char **argv);
int f3d_cmd_psh(int argc, char **argv);
int f3d_cmd_pool(int argc, char **argv);
int f3d_cmd_attn(int argc, char **argv);
int f3d_cmd_plot(int argc, char **argv);
int f3d_cmd_compare(int argc, char **argv);
int f3d_cmd_merge(int argc, char **argv);
int f3d_cmd_net(int argc, char **argv);

/* Print "f3dbench: <what>: <why>" on stderr. */
void f3d_fail(const char *what, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* f3d_fail for a library message (hx_err.msg): "f3dbench: <msg>" when msg already starts with "<what>:"
 * (the module or file it names), else "f3dbench: <what>: <msg>". */
void f3d_fail_msg(const char *what, const char *msg);
/* Note on stderr that a reader dropped n points of input with NaN/Inf coordinates (not an error: scans mark
 * missing returns so; the CSV indices stay the file's positions). */
void f3d_warn_dropped(const char *input, size_t n);

/* Load the result directories dirs[0..n) (for plot and merge). On failure prints
 * "f3dbench: <what>: <why>", frees whatever was loaded and returns NULL. Free with f3d_runs_free. */
hx_run *f3d_runs_load(const char *what, char *const *dirs, size_t n);
void f3d_runs_free(hx_run *runs, size_t n);

/* A byte count: digits with an optional fraction and suffix K, M, G or T (KiB, MiB, GiB, TiB also
 * accepted: powers of 1024), e.g. "512M", "1.5GiB", "1048576"; the result must be a whole number >= 1.
 * 0 on success, -1 otherwise. */
int f3d_parse_bytes(const char *s, uint64_t *out);
/* Parse a count with an optional k/K (1e3) or M (1e6) suffix: "100k", "1.5M", "250000". 0 on success. */
int f3d_parse_count(const char *s, uint64_t *out);
/* Parse an unsigned decimal integer fully (digits only: no blank, sign, octal or hex); 0 on success. */
int f3d_parse_u64(const char *s, uint64_t *out);
/* Parse a finite decimal double >= 0 (starting with a digit or '.': no blank, sign or hex); 0 on success. */
int f3d_parse_nonneg_double(const char *s, double *out);
/* The same, > 0. */
int f3d_parse_pos_double(const char *s, double *out);

/* An option's value checked against what it takes, the usage error naming the option, the value and the accepted
 * range or words: "f3dbench: WHAT: OPT 'VALUE': <what it takes>". 0 when *out holds the value, else 2 (the exit
 * code the caller returns) after printing. f3d_opt_count takes f3d_parse_count's forms (k/M suffixes), f3d_opt_u64
 * digits only, both from lo to hi; f3d_opt_word one of words[0..n) (*out its index). */
int f3d_opt_count(const char *what, const char *opt, const char *arg, uint64_t lo, uint64_t hi, uint64_t *out);
int f3d_opt_u64(const char *what, const char *opt, const char *arg, uint64_t lo, uint64_t hi, uint64_t *out);
int f3d_opt_word(const char *what, const char *opt, const char *arg, const char *const *words, size_t n, int *out);

/* ---- options and inputs shared by `psh` and `pool` (PSH bucketing of a batch of recorded clouds) ---- */
struct psh_params;
struct wl_cloud;
struct wl_batch;
/* Apply one getopt_long result c (with its optarg) of the PSH options --hash (H), --bucket-size (S),
 * --buckets (b), --voxel (v), --probes (p), --variant (V), --device (d), --seed (s), --out (o).
 * Returns 0 when applied, 2 after printing "f3dbench: <what>: ..." for a bad value, -1 when c is
 * not one of these options (the caller prints its usage). */
int f3d_psh_option(int c, const char *arg, const char *what, struct psh_params *p, const char **variant, int *gpu,
                   const char **out_path);
/* After option parsing: --out is required, argv[optind..argc) holds 1..65535 INPUTs and --out is none of them
 * (f3d_out_not_input). 0 when so, else 2 after printing the reason. */
int f3d_psh_inputs_check(const char *what, const char *out_path, int argc, char **argv, int optind_);
/* Whether an --out would replace one of the inputs[0..n): 0 when it names no existing regular file that is one of
 * them (the same st_dev and st_ino, so another path to it, a hard or symbolic link, counts), else 2 after printing
 * "f3dbench: <what>: --out FILE is the input INPUT: ..." (the usage error the caller returns). */
int f3d_out_not_input(const char *what, const char *out_path, char *const *inputs, size_t n);
struct psh_in;
/* A note on stderr when a cloud's hash cannot reach all of its buckets (psh_reachable_buckets): the cloud
 * with the fewest reachable, its voxel bits, and how many points the overflow policy placed (`placed_overflow`,
 * from the run's counters). Nothing when every bucket is reachable. */
void f3d_psh_reach_note(const char *what, const struct psh_in *in, const struct psh_params *p, uint64_t placed_overflow);
/* Read one cloud per input into a calloc'd *clouds (*nclouds is set to B as soon as it is allocated, so
 * the caller frees every wl_cloud_free-able entry even on failure) and concatenate them into *batch;
 * *nmax is the largest cloud. Dropped non-finite points are noted on stderr (f3d_warn_dropped). 0 on
 * success, else 1 after printing "f3dbench: <input or what>: <why>". */
int f3d_read_batch(struct wl_cloud **clouds, uint32_t *nclouds, struct wl_batch *batch, size_t *nmax, char **inputs,
                   uint32_t B, const char *what);

/* Write an output file atomically: f3d_out_open opens "<path>.tmp.<pid>" for writing (*tmp: its name,
 * malloc'd) or returns NULL after printing why (what: the subcommand, for "out of memory"). The caller
 * writes, ORing any failed write into bad, then f3d_out_close closes the file and renames it to path
 * (removing it instead when bad or on any failure): 0 on success, else 1 after printing
 * "f3dbench: <path>: <step> failed: <strerror>". Either way tmp is freed. What is not a regular file is
 * not replaced (hx_out_resolve): "-", or a path naming standard output, returns stdout (flushed, never
 * closed; the command then prints its summary on stderr); a FIFO or device is opened and written in place
 * (*tmp NULL); a symbolic link is followed, the regular file it ends at replaced as above (the temporary beside
 * it, the link kept); a directory is refused. */
FILE *f3d_out_open(const char *what, const char *path, char **tmp);
int f3d_out_close(const char *what, FILE *f, char *tmp, const char *path, int bad);
/* Give up on an output opened by f3d_out_open after a failure (already reported): close it, remove the
 * temporary file, free tmp; returns rc. Opening first and discarding on failure lets a command refuse an
 * unwritable path before its work rather than after. */
int f3d_out_discard(FILE *f, char *tmp, int rc);

/* A --save DIR of `attn` and `net`: an existing writable directory, or one mkdir can create (its parent an existing
 * writable directory). Checked before any work, so a typo in the path or an unwritable folder costs no run (the
 * save creates DIR at its end). HX_OK, or the reason in err, starting with DIR. */
hx_status f3d_save_dir_check(const char *dir, hx_err *err);
/* s for a message: whole up to 120 bytes, else "..." and its last 117 (from a whole UTF-8 character), the end being
 * what tells a long path from its parent; so the reason after it is never cut. Returns s or buf. */
const char *f3d_cut_path(char buf[128], const char *s);
/* The folder path is in, into out: "a/b/" -> "a", "b" -> ".", "/b" -> "/". */
void f3d_parent_dir(char *out, size_t cap, const char *path);
/* Whether a file can be made at path: its folder into parent, and 0 when path is not empty and this user can make
 * files in that folder; else ENOENT (no such folder, or an empty path), ENOTDIR (not a folder) or access's errno. */
int f3d_out_folder(const char *path, char *parent, size_t cap);

/* A save of several files into a folder, all or none (`net --save`, `attn --save`): f3d_stage_open creates DIR when
 * missing and a staging folder inside it (DIR/.TAG-save.XXXXXX, mkdtemp); each file is written at the path
 * f3d_stage_path gives, which names it in the list first; f3d_stage_commit checks that no destination is a folder,
 * then renames every file into DIR. Any failure before the first rename leaves DIR as it was (earlier files of the
 * same names kept, a DIR that open made removed): f3d_stage_abort removes what was staged. Only a rename failing
 * after the check (the folder changed under us) leaves part of a save in place, and the message says how much.
 * SIGINT/SIGTERM remove the staging folder and a DIR the save made (stop.h); a run killed outright leaves the
 * staging folder, which nothing reads. Files of an earlier save that this one does not write
 * stay. Messages start with DIR, or the destination file they are about. */
#define F3D_STAGE_MAX 64
typedef struct f3d_stage {
  char dir[4096], stage[4200]; /* stage: DIR/.TAG-save.XXXXXX, filled by mkdtemp */
  char name[F3D_STAGE_MAX][40];
  int n, made_dir;
} f3d_stage;
hx_status f3d_stage_open(f3d_stage *st, const char *dir, const char *tag, hx_err *err);
/* The staged path of the next file `name` (HX_EINVAL past F3D_STAGE_MAX files or a name too long). */
hx_status f3d_stage_path(f3d_stage *st, char *path, size_t cap, const char *name, hx_err *err);
/* Move every staged file into DIR (f3d_stage_abort's cleanup on failure, so only a call that returns HX_OK leaves
 * files in DIR). */
hx_status f3d_stage_commit(f3d_stage *st, hx_err *err);
void f3d_stage_abort(f3d_stage *st);
/* A whole save in one call: f3d_stage_open, files(st, arg) writing every file at f3d_stage_path's paths, then
 * f3d_stage_commit, or f3d_stage_abort when files fails; its message then reads "DIR: <why>", with the staging
 * folder's paths in it named as the destinations they were staged for. */
typedef hx_status (*f3d_stage_files_fn)(f3d_stage *st, void *arg, hx_err *err);
hx_status f3d_stage_save(const char *dir, const char *tag, f3d_stage_files_fn files, void *arg, hx_err *err);

/* A NumPy .npy file (format 1.0) of an ndim-dimensional array (1..4; NumPy's own header: "(n,)", "(a, b)"), its
 * elements `size` bytes (2 or 4) of the type descr ("<f4", "<f2", "<u2", "<u4"), written little endian whatever
 * the host, atomically (hx_write_file_atomic). */
hx_status f3d_npy_write(const char *path, const char *descr, size_t size, const void *data, int ndim,
                        const size_t *shape, hx_err *err);

/* Git state of the source tree the program was built from: short hash ("" when unknown) and dirty
 * flag (-1 unknown, 0 clean, 1 tracked files modified). Where git cannot tell (a copy of the tree
 * without .git), F3D_GIT_COMMIT and F3D_GIT_DIRTY=yes|no from the environment are used instead. */
void f3d_git_state(char *hash, size_t cap, int *dirty);

/* Context keys describing the build (version, build type, compilers, arch, optional features). */
hx_status f3d_context_build(hx_results *r, hx_err *err);
/* Whether a GPU command can run here, checked before any work: a CUDA device (else "no CUDA device (<reason>)")
 * and machine code of this build for it (hx_arch_check against F3D_CUDA_ARCH, else the rebuild to make).
 * f3d_gpu_check: HX_OK, or the status with the reason in err; f3d_gpu_ready: 0, or 1 after printing
 * "f3dbench: WHAT: <why>". dev (may be NULL) gets device 0, the one every GPU command uses. */
hx_status f3d_gpu_check(hx_device_info *dev, hx_err *err);
int f3d_gpu_ready(const char *what, hx_device_info *dev);
/* Context keys describing the host and the CUDA device (dev NULL: "none"). */
hx_status f3d_context_device(hx_results *r, const hx_device_info *dev, hx_err *err);

#endif /* F3D_CLI_H */
