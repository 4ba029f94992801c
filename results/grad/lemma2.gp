# lemma2.png from the CSVs beside this script; written by grad_table (do not edit):
# run `gnuplot lemma2.gp` in this directory.
if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo size 1400,1000 noenhanced font "sans,11" linewidth 1.3
} else {
    set terminal png size 1400,1000 noenhanced
}
set output 'lemma2.png'
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
data = 'lemma2_summary.csv'
set multiplot layout 2,2 title "Lemma 2: E||x_l||^2/d against the layer l (paper numbering; l = 1 is the embedding output), mean ± sd over seeds"
set xlabel "l"
set ylabel "E||x||^2 / d"
set key top left
set title "theorem setting: Pre-LN block inputs"
plot data using "l":"lo":"hi" with filledcurves lc rgb '#cfe0f3' title "band [1 + l/2, 1 + 3l/2]", \
     data using "l":"theorem_pre_mean":"theorem_pre_sd" with yerrorlines ls 2 title "Pre-LN x^pre_l"
set title "realistic setting: Pre-LN block inputs"
plot data using "l":"lo":"hi" with filledcurves lc rgb '#cfe0f3' title "band [1 + l/2, 1 + 3l/2]", \
     data using "l":"realistic_pre_mean":"realistic_pre_sd" with yerrorlines ls 2 title "Pre-LN x^pre_l"
set title "theorem setting: Post-LN FFN residual sums"
plot data using "l":"theorem_post5_mean":"theorem_post5_sd" with yerrorlines ls 1 title "Post-LN x^{post,5}_l", \
     data using "l":"theorem_post5_target" with lines ls 11 title "1 + 2r/(1+r)^2, r = d_ff/d"
set title "realistic setting: Post-LN FFN residual sums"
plot data using "l":"realistic_post5_mean":"realistic_post5_sd" with yerrorlines ls 1 title "Post-LN x^{post,5}_l", \
     data using "l":"realistic_post5_target" with lines ls 11 title "1 + 2r/(1+r)^2, r = d_ff/d"
unset multiplot
