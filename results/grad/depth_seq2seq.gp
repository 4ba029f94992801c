# depth_seq2seq.png from the CSVs beside this script; written by grad_table (do not edit):
# run `gnuplot depth_seq2seq.gp` in this directory.
if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo size 1400,620 noenhanced font "sans,11" linewidth 1.3
} else {
    set terminal png size 1400,620 noenhanced
}
set output 'depth_seq2seq.png'
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
set multiplot layout 1,2 title "Last-layer ||dL/dW2||_F against depth L (L-L seq2seq, Figure 3 c, d, d = 64, V = 256, output tied to the embedding), mean ± sd over 10 seeds; log-log"
set logscale xy
set key bottom left font ",9"
set xtics (6, 8, 10, 12, 14)
set xrange [5:16.8]
set yrange [0.0136:0.702]
set xlabel "L (blocks per stack)"
set ylabel "||dL/dW2||_F"
set title "theorem setting"
plot 'depth_seq2seq_summary.csv' using "L":"theorem_post_mean":"theorem_post_sd" with yerrorlines ls 1 title "Post-LN", \
     '' using "L":"theorem_post_theory" with lines ls 11 title "Post-LN theory: flat", \
     (x >= 6 && x <= 14 ? 0.38862642 * x**(-0.026226784) : 1/0) with lines ls 21 title "Post-LN fit, L = 6-14: slope -0.03 ± 0.10, chi2/dof 1.4", \
     'depth_seq2seq_summary.csv' using "L":"theorem_pre_mean":"theorem_pre_sd" with yerrorlines ls 2 title "Pre-LN", \
     '' using "L":"theorem_pre_theory" with lines ls 12 title "Pre-LN theory: L^(-1/2)", \
     (x >= 6 && x <= 14 ? 0.28017135 * x**(-0.52762329) : 1/0) with lines ls 22 title "Pre-LN fit, L = 6-14: slope -0.528 ± 0.064, chi2/dof 0.4", \
     (x >= 10 && x <= 14 ? 0.38329382 * x**(-0.65337279) : 1/0) with lines ls 32 title "Pre-LN fit, L = 10-14: slope -0.65 ± 0.27, chi2/dof 0.8"
set title "realistic setting"
plot 'depth_seq2seq_summary.csv' using "L":"realistic_post_mean":"realistic_post_sd" with yerrorlines ls 1 title "Post-LN", \
     '' using "L":"realistic_post_theory" with lines ls 11 title "Post-LN theory: flat", \
     (x >= 6 && x <= 14 ? 0.38850062 * x**(0.08997257) : 1/0) with lines ls 21 title "Post-LN fit, L = 6-14: slope 0.090 ± 0.088, chi2/dof 1.9", \
     'depth_seq2seq_summary.csv' using "L":"realistic_pre_mean":"realistic_pre_sd" with yerrorlines ls 2 title "Pre-LN", \
     '' using "L":"realistic_pre_theory" with lines ls 12 title "Pre-LN theory: L^(-1/2)", \
     (x >= 6 && x <= 14 ? 0.26612565 * x**(-0.37750768) : 1/0) with lines ls 22 title "Pre-LN fit, L = 6-14: slope -0.378 ± 0.060, chi2/dof 0.1", \
     (x >= 10 && x <= 14 ? 0.30911809 * x**(-0.43493195) : 1/0) with lines ls 32 title "Pre-LN fit, L = 10-14: slope -0.43 ± 0.21, chi2/dof 0.0"
unset multiplot
