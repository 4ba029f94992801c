# gnuplot script: Xiong et al. Figure 3 on Multi30k (grad_profile.csv, grad_depth.csv; the fits of slopes.md)
set terminal pngcairo size 1350,480 noenhanced
set output 'grad.png'
set datafile separator ','
set multiplot layout 1,3
set xlabel 'layer (encoder 1..6, decoder 7..12)'
set ylabel '||dL/dW||_F (mean +- sd over 3 seeds)'
set key top left
set xrange [0.5:12.5]
set yrange [0:*]
set arrow from 6.5, graph 0 to 6.5, graph 1 nohead dt 2 lc 'gray'
enc(c) = strcol(2) eq 'enc' ? column(c) : 1/0
dec(c) = strcol(2) eq 'dec' ? column(c) : 1/0
set title '(a, b) W1, 6-6 model'
plot 'grad_profile.csv' every ::1 using 1:(enc(4)):5 with yerrorlines lw 2 lc 1 title 'Post-LN', '' every ::1 using 1:(dec(4)):5 with yerrorlines lw 2 lc 1 notitle, \
     '' every ::1 using 1:(enc(8)):9 with yerrorlines lw 2 lc 2 title 'Pre-LN', '' every ::1 using 1:(dec(8)):9 with yerrorlines lw 2 lc 2 notitle
set title '(a, b) W2, 6-6 model'
plot 'grad_profile.csv' every ::1 using 1:(enc(6)):7 with yerrorlines lw 2 lc 1 title 'Post-LN', '' every ::1 using 1:(dec(6)):7 with yerrorlines lw 2 lc 1 notitle, \
     '' every ::1 using 1:(enc(10)):11 with yerrorlines lw 2 lc 2 title 'Pre-LN', '' every ::1 using 1:(dec(10)):11 with yerrorlines lw 2 lc 2 notitle
unset arrow
set title '(c, d) last decoder W2 (log-log; dashed: theory)'
set xlabel 'L (L-L model)'
set logscale xy
set xrange [5.4:15.4]
set yrange [0.0122:0.165]
set key below horizontal maxcols 3 width -2
set xtics (6, 8, 10, 12, 14)
set ytics (0.02, 0.05, 0.1)
bp = -0.032310073493844814; ap = -2.2481558488204145
bq = -0.52967703197234217; aq = -2.4004824736692254
fp(x) = exp(ap) * x**bp
fq(x) = exp(aq) * x**bq
tp(x) = fp(9.1651513899116797)
tq(x) = fq(9.1651513899116797) * (x / 9.1651513899116797)**(-0.5)
plot 'grad_depth.csv' every ::1 using 1:2:3 with yerrorbars pt 7 lc 1 title 'Post-LN', fp(x) lw 2 lc 1 title sprintf('fit %+.2f', bp), tp(x) dt 2 lc 1 title 'flat', \
     'grad_depth.csv' every ::1 using 1:4:5 with yerrorbars pt 5 lc 2 title 'Pre-LN', fq(x) lw 2 lc 2 title sprintf('fit %+.2f', bq), tq(x) dt 2 lc 2 title 'L^(-1/2)'
unset multiplot
