# profile_seq2seq.png from the CSVs beside this script; written by grad_table (do not edit):
# run `gnuplot profile_seq2seq.gp` in this directory.
if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
    set terminal pngcairo size 1400,1000 noenhanced font "sans,11" linewidth 1.3
} else {
    set terminal png size 1400,1000 noenhanced
}
set output 'profile_seq2seq.png'
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
set multiplot layout 2,2 title "Per-layer gradient norms at initialisation, 6-6 seq2seq (encoder blocks, then decoder blocks), mean ± sd over seeds (Figure 3 a, b)"
set xlabel "block"
set xrange [0:14]
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0
set key top left font ",9"
set title "theorem setting: W1"
set ylabel "||dL/dW1||_F"
data = 'profile_seq2seq_theorem_summary.csv'
plot data using "x":(strcol("stack") eq "enc" ? column("post_w1_mean") : 1/0):"post_w1_sd":xtic(strcol("layer")) with yerrorlines ls 1 title "Post-LN", \
     data using "x":(strcol("stack") eq "enc" ? column("pre_w1_mean") : 1/0):"pre_w1_sd":xtic(strcol("layer")) with yerrorlines ls 2 title "Pre-LN", \
     data using "x":(strcol("stack") eq "dec" ? column("post_w1_mean") : 1/0):"post_w1_sd":xtic(strcol("layer")) with yerrorlines ls 1 title "", \
     data using "x":(strcol("stack") eq "dec" ? column("pre_w1_mean") : 1/0):"pre_w1_sd":xtic(strcol("layer")) with yerrorlines ls 2 title ""
set title "theorem setting: W2"
set ylabel "||dL/dW2||_F"
data = 'profile_seq2seq_theorem_summary.csv'
plot data using "x":(strcol("stack") eq "enc" ? column("post_w2_mean") : 1/0):"post_w2_sd":xtic(strcol("layer")) with yerrorlines ls 1 title "Post-LN", \
     data using "x":(strcol("stack") eq "enc" ? column("pre_w2_mean") : 1/0):"pre_w2_sd":xtic(strcol("layer")) with yerrorlines ls 2 title "Pre-LN", \
     data using "x":(strcol("stack") eq "dec" ? column("post_w2_mean") : 1/0):"post_w2_sd":xtic(strcol("layer")) with yerrorlines ls 1 title "", \
     data using "x":(strcol("stack") eq "dec" ? column("pre_w2_mean") : 1/0):"pre_w2_sd":xtic(strcol("layer")) with yerrorlines ls 2 title ""
set title "realistic setting: W1"
set ylabel "||dL/dW1||_F"
data = 'profile_seq2seq_realistic_summary.csv'
plot data using "x":(strcol("stack") eq "enc" ? column("post_w1_mean") : 1/0):"post_w1_sd":xtic(strcol("layer")) with yerrorlines ls 1 title "Post-LN", \
     data using "x":(strcol("stack") eq "enc" ? column("pre_w1_mean") : 1/0):"pre_w1_sd":xtic(strcol("layer")) with yerrorlines ls 2 title "Pre-LN", \
     data using "x":(strcol("stack") eq "dec" ? column("post_w1_mean") : 1/0):"post_w1_sd":xtic(strcol("layer")) with yerrorlines ls 1 title "", \
     data using "x":(strcol("stack") eq "dec" ? column("pre_w1_mean") : 1/0):"pre_w1_sd":xtic(strcol("layer")) with yerrorlines ls 2 title ""
set title "realistic setting: W2"
set ylabel "||dL/dW2||_F"
data = 'profile_seq2seq_realistic_summary.csv'
plot data using "x":(strcol("stack") eq "enc" ? column("post_w2_mean") : 1/0):"post_w2_sd":xtic(strcol("layer")) with yerrorlines ls 1 title "Post-LN", \
     data using "x":(strcol("stack") eq "enc" ? column("pre_w2_mean") : 1/0):"pre_w2_sd":xtic(strcol("layer")) with yerrorlines ls 2 title "Pre-LN", \
     data using "x":(strcol("stack") eq "dec" ? column("post_w2_mean") : 1/0):"post_w2_sd":xtic(strcol("layer")) with yerrorlines ls 1 title "", \
     data using "x":(strcol("stack") eq "dec" ? column("pre_w2_mean") : 1/0):"pre_w2_sd":xtic(strcol("layer")) with yerrorlines ls 2 title ""
unset multiplot
