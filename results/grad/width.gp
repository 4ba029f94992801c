# width.png from the CSVs beside this script; written by grad_table (do not edit):
# run `gnuplot width.gp` in this directory.
if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo size 1900,620 noenhanced font "sans,11" linewidth 1.3
} else {
    set terminal png size 1900,620 noenhanced
}
set output 'width.png'
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
set multiplot layout 1,3 title "Last-layer ||dL/dW2||_F against width d (cls, L = 4, V = 256, output tied to the embedding), mean ± sd over 10 seeds"
set logscale xy
set key bottom right font ",9"
set xtics (32, 64, 128, 256, 512, 1024)
set xrange [26.6667:1228.8]
set yrange [0.0295:4.65]
set xlabel "d"
set ylabel "||dL/dW2||_F"
set title "theorem setting (dashed: d sqrt(ln d) through the first point)"
plot 'width_summary.csv' using "d":"theorem_post_mean":"theorem_post_sd" with yerrorlines ls 1 title "Post-LN", \
     '' using "d":"theorem_post_theory" with lines ls 11 title "Post-LN theory: d sqrt(ln d)", \
     (x >= 32 && x <= 1024 ? 0.045584175 * x**(0.51932747) : 1/0) with lines ls 21 title "Post-LN fit, d = 32-1024: slope 0.519 ± 0.018, chi2/dof 2.6", \
     'width_summary.csv' using "d":"theorem_pre_mean":"theorem_pre_sd" with yerrorlines ls 2 title "Pre-LN", \
     '' using "d":"theorem_pre_theory" with lines ls 12 title "Pre-LN theory: d sqrt(ln d / L)", \
     (x >= 32 && x <= 1024 ? 0.0099624573 * x**(0.821) : 1/0) with lines ls 22 title "Pre-LN fit, d = 32-1024: slope 0.821 ± 0.081, chi2/dof 77.4"
set title "realistic setting (dashed: d sqrt(ln d) through the first point)"
plot 'width_summary.csv' using "d":"realistic_post_mean":"realistic_post_sd" with yerrorlines ls 1 title "Post-LN", \
     '' using "d":"realistic_post_theory" with lines ls 11 title "Post-LN theory: d sqrt(ln d)", \
     (x >= 32 && x <= 1024 ? 0.038068063 * x**(0.59803499) : 1/0) with lines ls 21 title "Post-LN fit, d = 32-1024: slope 0.598 ± 0.041, chi2/dof 17.3", \
     'width_summary.csv' using "d":"realistic_pre_mean":"realistic_pre_sd" with yerrorlines ls 2 title "Pre-LN", \
     '' using "d":"realistic_pre_theory" with lines ls 12 title "Pre-LN theory: d sqrt(ln d / L)", \
     (x >= 32 && x <= 1024 ? 0.012332201 * x**(0.83596633) : 1/0) with lines ls 22 title "Pre-LN fit, d = 32-1024: slope 0.836 ± 0.090, chi2/dof 393.0"
set title "norm / Theorem 1's rate x 1e3 (width_bound)"
unset logscale y
set yrange [0:*]
set key top right font ",9"
set ylabel "x 1e3: Post-LN / (d sqrt(ln d)), Pre-LN / (d sqrt(ln d / L))"
plot 'width_summary.csv' using "d":"theorem_post_bound_mean":"theorem_post_bound_sd" with yerrorlines ls 1 title "theorem Post-LN", \
     '' using "d":"theorem_pre_bound_mean":"theorem_pre_bound_sd" with yerrorlines ls 2 title "theorem Pre-LN", \
     '' using "d":"realistic_post_bound_mean":"realistic_post_bound_sd" with yerrorlines ls 3 dt 4 title "realistic Post-LN", \
     '' using "d":"realistic_pre_bound_mean":"realistic_pre_bound_sd" with yerrorlines ls 4 dt 4 title "realistic Pre-LN"
unset multiplot
