/*
 * test_args.h - the one option of the GPU test programs that have a slow suite: --slow (every rung, the large and
 * recorded inputs; meson's suite `slow`). Include after <stdio.h> and <string.h>.
 */
#ifndef F3D_TEST_ARGS_H
#define F3D_TEST_ARGS_H

/* 1 with --slow, 0 without; -1 (usage printed) for any other argument. */
static inline int t_slow_arg(int argc, char **argv) {
  int slow = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--slow") != 0) {
      fprintf(stderr, "usage: %s [--slow]\n", argv[0]);
      return -1;
    }
    slow = 1;
  }
  return slow;
}

#endif
