/*
 * stop.h - SIGINT and SIGTERM for the whole program, and the temporary files and folders a signal removes.
 *
 * The program's one signal state (the library keeps none): f3d_stop_signal, a fixed table of the temporaries
 * the program has made and not yet renamed or removed, and one of the child processes that may write into them
 * (gnuplot, told through f3d_child_watch). Every command but sweep stops at once: the handler kills and reaps each
 * registered child, removes each registered temporary (unlink; a folder's entries, then the folder), says so in one
 * line and exits 128 + signal. The sweep stops in order (f3d_signals_install orderly): the handler only sets
 * f3d_stop_signal, which the sweep polls between measurements to keep its finished cases; a second signal 2 s or
 * more later kills it.
 */
#ifndef F3D_STOP_H
#define F3D_STOP_H

#include <signal.h>

#include "harness/harness.h"

/* The first SIGINT/SIGTERM received (0: none); set by the handler only. */
extern volatile sig_atomic_t f3d_stop_signal;

/* Install the handlers for SIGINT and SIGTERM; what names the command in the handler's line ("f3dbench: <what>:
 * interrupted (SIGINT received), ..."); it must stay valid (a string literal or argv). */
void f3d_signals_install(const char *what, int orderly);

/* What a registered temporary is: a file (unlinked), a folder of files (its entries unlinked, then rmdir), or a folder
 * removed only when empty (one the command created to hold its output: rmdir, which never removes anything else). */
typedef enum f3d_tmp_kind { F3D_TMP_FILE = 1, F3D_TMP_DIR, F3D_TMP_EMPTY_DIR } f3d_tmp_kind;
#define F3D_TMP_SLOTS 16
#define F3D_TMP_PATH 4096
/* Register path before the temporary is created (removing one not yet made is harmless), so no moment exists when it
 * is on disk and unknown to the handler. 0, or -1 when the table is full or the path too long (then a signal leaves
 * it, as before). Temporaries are removed in the reverse order of registration: files before their folders. */
int f3d_tmp_add(const char *path, f3d_tmp_kind kind);
/* The temporary at path was renamed into place or removed: forget it (nothing when it is not registered). */
void f3d_tmp_drop(const char *path);

/* Hand this to the library (hx_plot_sel) so that a signal ends its children: each one it starts, leading a process
 * group of its own, is registered until it has exited (not yet reaped); the handler sends SIGKILL to that group and
 * reaps the child before removing the temporaries, so nothing the child writes lands in them afterwards. A child
 * started while all F3D_CHILD_SLOTS are taken is left running by a signal, as before. Only for a command that starts
 * its children from one thread (plot): the library blocks signals around each registration on the starting thread
 * only, so a handler running on another thread could see a child not yet registered. */
#define F3D_CHILD_SLOTS 4
extern const hx_child_watch f3d_child_watch;

#endif
