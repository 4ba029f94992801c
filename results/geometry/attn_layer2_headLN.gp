# attn_layer2_headLN.png from attn_map_layer2_*.csv (written by ln_geometry_summary; run in its directory)
set terminal pngcairo noenhanced font 'sans,9' size 1320,340
set output 'attn_layer2_headLN.png'
set datafile separator ','
set palette defined (0 '#440154', 0.125 '#472d7b', 0.25 '#3b528b', 0.375 '#2c728e', 0.5 '#21918c', 0.625 '#28ae80', 0.75 '#5ec962', 0.875 '#addc30', 1 '#fde725') # viridis
set cbrange [0:0.2720]
set cblabel 'attention weight'
set xlabel 'key'
set ylabel 'query'
set size ratio -1
set xrange [-0.5:26.5]
set yrange [26.5:-0.5]
set multiplot layout 1,4 title 'attention maps, layer 2, one sequence of 27 tokens (Pre-LN encoder at init; variants as in attn_stats.md; common colour scale)'
set title 'headLN, head 0'
plot 'attn_map_layer2_headLN.csv' skip 1 every ::0::728 using 3:2:4 with image notitle
set title 'headLN, head 1'
plot 'attn_map_layer2_headLN.csv' skip 1 every ::729::1457 using 3:2:4 with image notitle
set title 'headLN, head 2'
plot 'attn_map_layer2_headLN.csv' skip 1 every ::1458::2186 using 3:2:4 with image notitle
set title 'headLN, head 3'
plot 'attn_map_layer2_headLN.csv' skip 1 every ::2187::2915 using 3:2:4 with image notitle
unset multiplot
