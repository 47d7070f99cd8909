# treemap.gp - per-stage share of one case as nested rectangles (area = time), one unit square per
# pipeline side by side. The rectangles are computed by the harness (squarified, harness/plot.c).
# Parameters: datafile, out, fmt, title.
# Data file rows: x1 x2 y1 y2 colour_index "stage label" "value label"; panel titles in rows with
# colour_index -1 (x1 = panel centre, y1 = title height, the two labels = title lines).
if (fmt eq "svg") { set terminal svg size 1000,560 dynamic noenhanced font "DejaVu Sans,10" } \
else { set terminal pngcairo size 1000,560 noenhanced font "DejaVu Sans,10" }
set output out
set title title
unset key
unset xtics
unset ytics
unset border
set style fill solid 0.8 border rgb "white"
set size ratio -1
set offsets 0.02, 0.02, 0.2, 0.02
plot datafile using (($1+$2)/2):(($3+$4)/2):1:2:3:4:($5 < 0 ? NaN : $5) with boxxyerror lc variable, \
     "" using (($1+$2)/2):(($3+$4)/2):((($2-$1) > 0.12 && ($4-$3) > 0.06 && $5 >= 0) ? sprintf("%s\n%s", strcol(6), strcol(7)) : "") with labels font ",9", \
     "" using ($5 < 0 ? $1 : NaN):3:(sprintf("%s\n%s", strcol(6), strcol(7))) with labels font ",10"
