# tiles.gp - a breakdown as squarified treemaps, one unit square per model (and device) side by side, area =
# time; the palette of bars.gp, so a component has the same colour in both figures, and a legend of the
# colours below (small tiles carry no label). The rectangles are computed by the harness (harness/plot.c).
# Parameters: datafile, out, fmt, title, panels (the number of squares), names (one word per colour index).
# Data file rows: x1 x2 y1 y2 colour_index "component" "value" "share"; a panel's title in a row with
# colour_index -1 (x1 = panel centre, y1 = title height, the component and value fields = its two lines).
if (!exists("panels")) { panels = 1 }
if (!exists("names")) { names = "" }
w = panels < 2 ? 600 : 120 + 380 * panels
if (fmt eq "svg") { set terminal svg size w,560 dynamic noenhanced font "DejaVu Sans,10" } \
else { set terminal pngcairo size w,560 noenhanced font "DejaVu Sans,10" }
set output out
set title title font ",13"
set key below horizontal font ",10" samplen 1.5
unset xtics
unset ytics
unset border
set style fill solid 0.9 border rgb "white"
set size ratio -1
set autoscale fix
set offsets 0.02, 0.02, 0.18, 0.01
set linetype 1 lc rgb "#4e79a7"
set linetype 2 lc rgb "#f28e2b"
set linetype 3 lc rgb "#e15759"
set linetype 4 lc rgb "#76b7b2"
set linetype 5 lc rgb "#59a14f"
set linetype 6 lc rgb "#edc948"
set linetype 7 lc rgb "#b07aa1"
set linetype 8 lc rgb "#ff9da7"
set linetype 9 lc rgb "#9c755f"
set linetype 10 lc rgb "#bab0ac"
set linetype 11 lc rgb "#1f3b73"
set linetype 12 lc rgb "#8cd17d"
set linetype 13 lc rgb "#d37295"
set linetype 14 lc rgb "#499894"
set linetype 15 lc rgb "#86bcb6"
set linetype 16 lc rgb "#79706e"
set linetype cycle 16
# labels on tiles wide and tall enough for three short lines (name, time, share) at this scale
plot datafile using (($1+$2)/2):(($3+$4)/2):1:2:3:4:($5 < 0 ? NaN : $5) with boxxyerror lc variable notitle, \
     "" using (($1+$2)/2):(($3+$4)/2):((($2-$1) > 0.17 && ($4-$3) > 0.13 && $5 >= 0) ? sprintf("%s\n%s\n%s", strcol(6), strcol(7), strcol(8)) : "") with labels font ",9" notitle, \
     "" using ($5 < 0 ? $1 : NaN):3:(sprintf("%s\n%s", strcol(6), strcol(7))) with labels font ",11" notitle, \
     for [i=1:words(names)] NaN with boxes lt i title word(names, i)
