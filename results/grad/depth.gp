# depth.png from the CSVs beside this script; written by grad_table (do not edit):
# run `gnuplot depth.gp` in this directory.
if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo size 1400,620 noenhanced font "sans,11" linewidth 1.3
} else {
    set terminal png size 1400,620 noenhanced
}
set output 'depth.png'
set datafile separator comma
set datafile missing ""
set grid
set samples 400
# Post-LN red, Pre-LN blue; dashed: theory; solid: fitted; dotted: fitted on the deeper half
set style line 1 lc rgb '#c0392b' pt 7 ps 0.9
set style line 2 lc rgb '#2c6fbb' pt 5 ps 0.9
set style line 3 lc rgb '#e67e22' pt 6 ps 0.9
set style line 4 lc rgb '#16a085' pt 4 ps 0.9
set style line 11 lc rgb '#c0392b' dt 2
set style line 12 lc rgb '#2c6fbb' dt 2
set style line 21 lc rgb '#c0392b' lw 1.5
set style line 22 lc rgb '#2c6fbb' lw 1.5
set style line 31 lc rgb '#c0392b' dt 3 lw 2
set style line 32 lc rgb '#2c6fbb' dt 3 lw 2
set multiplot layout 1,2 title "Last-layer ||dL/dW2||_F against depth L (cls encoder, d = 64, V = 256, output tied to the embedding), mean ± sd over 10 seeds; log-log"
set logscale xy
set key bottom left font ",9"
set xtics (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48)
set xrange [0.833333:57.6]
set yrange [0.0118:0.768]
set xlabel "L (blocks)"
set ylabel "||dL/dW2||_F"
set title "theorem setting"
plot 'depth_summary.csv' using "L":"theorem_post_mean":"theorem_post_sd" with yerrorlines ls 1 title "Post-LN", \
     '' using "L":"theorem_post_theory" with lines ls 11 title "Post-LN theory: flat", \
     (x >= 1 && x <= 48 ? 0.32632263 * x**(0.037076808) : 1/0) with lines ls 21 title "Post-LN fit, L = 1-48: slope 0.037 ± 0.023, chi2/dof 3.7", \
     'depth_summary.csv' using "L":"theorem_pre_mean":"theorem_pre_sd" with yerrorlines ls 2 title "Pre-LN", \
     '' using "L":"theorem_pre_theory" with lines ls 12 title "Pre-LN theory: L^(-1/2)", \
     (x >= 1 && x <= 48 ? 0.38045925 * x**(-0.52902776) : 1/0) with lines ls 22 title "Pre-LN fit, L = 1-48: slope -0.529 ± 0.031, chi2/dof 8.8", \
     (x >= 8 && x <= 48 ? 0.21552424 * x**(-0.33163161) : 1/0) with lines ls 32 title "Pre-LN fit, L = 8-48: slope -0.332 ± 0.048, chi2/dof 1.8"
set title "realistic setting"
plot 'depth_summary.csv' using "L":"realistic_post_mean":"realistic_post_sd" with yerrorlines ls 1 title "Post-LN", \
     '' using "L":"realistic_post_theory" with lines ls 11 title "Post-LN theory: flat", \
     (x >= 1 && x <= 48 ? 0.47144114 * x**(-0.0073628169) : 1/0) with lines ls 21 title "Post-LN fit, L = 1-48: slope -0.007 ± 0.034, chi2/dof 19.3", \
     'depth_summary.csv' using "L":"realistic_pre_mean":"realistic_pre_sd" with yerrorlines ls 2 title "Pre-LN", \
     '' using "L":"realistic_pre_theory" with lines ls 12 title "Pre-LN theory: L^(-1/2)", \
     (x >= 1 && x <= 48 ? 0.57522036 * x**(-0.62105029) : 1/0) with lines ls 22 title "Pre-LN fit, L = 1-48: slope -0.621 ± 0.025, chi2/dof 8.5", \
     (x >= 8 && x <= 48 ? 0.41806126 * x**(-0.48675488) : 1/0) with lines ls 32 title "Pre-LN fit, L = 8-48: slope -0.487 ± 0.034, chi2/dof 0.1"
unset multiplot
