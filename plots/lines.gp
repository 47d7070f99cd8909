# lines.gp - one figure of "metric vs input size", one line per series, optional error bars (mean +- std).
# Written by f3dbench plot (harness/plot.c); reads only the data file it is given.
# Parameters (gnuplot -e): datafile, out, fmt ("png"|"svg"), title, ylabel, logy (0|1), errors (0|1),
# paired (optional, N > 0: blocks i and N+i are two metrics of one series: same colour, the second dashed
# and left out of the legend), ymin0 (optional, 1: the y axis starts at 0; for non-negative metrics on a
# linear axis, where the bottom margin below would otherwise reach into negative values).
# Data file: one block per series, blocks separated by two blank lines; a block starts with a line of two
# quoted fields, the full series name (pipeline/kernel/variant workload) and the short legend title, then
# rows "n_points value error". Optional cols, dts, pts (several runs): per block, in order, its colour,
# dash type and point type (space-separated numbers).
# Optional xt, xtl: the sizes drawn and their labels ("100000 200000", "100k 200k"), a tick at each.
if (fmt eq "svg") { set terminal svg size 1000,750 dynamic noenhanced font "DejaVu Sans,11" } \
else { set terminal pngcairo size 1000,750 noenhanced font "DejaVu Sans,11" }
set output out
set title title
set xlabel "points per cloud"
set ylabel ylabel
set grid
# the legend below the plot, never over it (the harness keeps the series few); "height 2" keeps its first
# row clear of the x label, which gnuplot otherwise draws on top of it
set key below left Left reverse maxcols 2 font ",10" spacing 1.1 width 2 height 2
set format x "%.0s%c"
# sizes are linear steps (100k..600k) in the default sweep: a linear axis reads best
if (logy) { set logscale y }
if (!exists("ymin0")) { ymin0 = 0 }
# margins around the data; none below a y axis that starts at 0 (gnuplot widens even a fixed minimum by it), and
# none above or below on a log axis, whose range already ends at the decades around the data (vertical margins
# there were applied after that extension and widened the range by one more decade at each end)
if (ymin0 && !logy) { set yrange [0:*]; set offsets graph 0.03, graph 0.03, graph 0.05, 0 } \
else { if (logy) { set offsets graph 0.03, graph 0.03, 0, 0 } \
else { set offsets graph 0.03, graph 0.03, graph 0.05, graph 0.05 } }
set autoscale xfixmin
set autoscale xfixmax
if (!exists("paired")) { paired = 0 }
if (!exists("cols")) { cols = "" }
styled = strlen(cols) > 0
nblocks = 0
stats datafile using 1 nooutput
nblocks = STATS_blocks
# x ticks: with a few sizes (xt, labels xtl, from the harness) a tick at each, so each label is a size drawn and
# is written once (gnuplot's own ticks around one size read "20k 20k 20k"); one size gets a range around it
if (STATS_min == STATS_max) { set xrange [STATS_min * 0.8 : STATS_max * 1.2] }
if (exists("xt") && words(xt) > 0) { set xtics (word(xtl, 1) real(word(xt, 1))) }
if (exists("xt") && words(xt) > 1) { do for [i=2:words(xt)] { set xtics add (word(xtl, i) real(word(xt, i))) } }
# stats counts one block more than the file holds (its trailing blank lines); the styles name each real one
if (styled && words(cols) < nblocks) { nblocks = words(cols) }
if (paired > 0) {
  plot for [i=0:paired-1] datafile index i using 1:2 with linespoints lw 1.8 pt 7 ps 0.6 lc i+1 dt 1 \
         title columnheader(2), \
       for [i=paired:nblocks-1] datafile index i using 1:2 with linespoints lw 1.8 pt 6 ps 0.6 lc i-paired+1 dt 2 \
         notitle
} else { if (styled) {
  # several runs (devices): colour per series, dash and point type per device (cols/dts/pts: one word per block)
  if (errors) {
    plot for [i=0:nblocks-1] datafile index i using 1:2:3 with yerrorlines lw 1.5 ps 0.7 \
      lc int(word(cols, i+1)) dt int(word(dts, i+1)) pt int(word(pts, i+1)) title columnheader(2)
  } else {
    plot for [i=0:nblocks-1] datafile index i using 1:2 with linespoints lw 1.5 ps 0.7 \
      lc int(word(cols, i+1)) dt int(word(dts, i+1)) pt int(word(pts, i+1)) title columnheader(2)
  }
} else { if (errors) {
  plot for [i=0:nblocks-1] datafile index i using 1:2:3 with yerrorlines lw 1.5 pt 7 ps 0.6 title columnheader(2)
} else {
  plot for [i=0:nblocks-1] datafile index i using 1:2 with linespoints lw 1.5 pt 7 ps 0.6 title columnheader(2)
} } }
