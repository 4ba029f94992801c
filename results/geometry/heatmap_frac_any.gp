# heatmap_frac_any.png from heatmap.csv (written by ln_geometry_summary; run in its directory)
set terminal pngcairo noenhanced font 'sans,9' size 1500,700
set output 'heatmap_frac_any.png'
set datafile separator ','
set palette defined (0 '#440154', 0.125 '#472d7b', 0.25 '#3b528b', 0.375 '#2c728e', 0.5 '#21918c', 0.625 '#28ae80', 0.75 '#5ec962', 0.875 '#addc30', 1 '#fde725') # viridis
set cbrange [0:1]
set cblabel 'fraction of runs with >= 1 unselectable key'
set xlabel 'n (keys)'
set ylabel 'd'
set xrange [2.5:60.5]
set yrange [2.5:15.5]
set multiplot layout 2,4 title 'fraction of runs with >= 1 unselectable key (100 runs a cell; rows: gauss keys, offset keys; columns: the norm, as in heatmap_thresholds.md)'
set title 'gauss keys, none'
plot 'heatmap.csv' skip 1 every ::0::753 using 3:4:6 with image notitle
set title 'gauss keys, projection P'
plot 'heatmap.csv' skip 1 every ::754::1507 using 3:4:6 with image notitle
set title 'gauss keys, scaling S (RMS)'
plot 'heatmap.csv' skip 1 every ::1508::2261 using 3:4:6 with image notitle
set title 'gauss keys, LayerNorm S(P)'
plot 'heatmap.csv' skip 1 every ::2262::3015 using 3:4:6 with image notitle
set title 'offset keys, none'
plot 'heatmap.csv' skip 1 every ::3016::3769 using 3:4:6 with image notitle
set title 'offset keys, projection P'
plot 'heatmap.csv' skip 1 every ::3770::4523 using 3:4:6 with image notitle
set title 'offset keys, scaling S (RMS)'
plot 'heatmap.csv' skip 1 every ::4524::5277 using 3:4:6 with image notitle
set title 'offset keys, LayerNorm S(P)'
plot 'heatmap.csv' skip 1 every ::5278::6031 using 3:4:6 with image notitle
unset multiplot
