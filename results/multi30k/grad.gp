# gnuplot script: Xiong et al. Figure 3 on Multi30k (grad_profile.csv, grad_depth.csv)
set terminal pngcairo size 1350,430 noenhanced
set output 'grad.png'
set datafile separator ','
set multiplot layout 1,3
set xlabel 'layer (encoder 1..6, decoder 7..12)'
set ylabel '||dL/dW||_F (mean +- sd over 6 seeds)'
set key top left
set xrange [0.5:12.5]
set title '(a, b) W1, 6-6 model'
plot 'grad_profile.csv' every ::1 using 1:4:5 with yerrorlines lw 2 title 'Post-LN', '' every ::1 using 1:8:9 with yerrorlines lw 2 title 'Pre-LN'
set title '(a, b) W2, 6-6 model'
plot 'grad_profile.csv' every ::1 using 1:6:7 with yerrorlines lw 2 title 'Post-LN', '' every ::1 using 1:10:11 with yerrorlines lw 2 title 'Pre-LN'
set title '(c, d) W2 of the last decoder layer'
set xlabel 'L (L-L model)'
set autoscale x
set offsets 0.5, 0.5, 0, 0
plot 'grad_depth.csv' every ::1 using 1:2:3 with yerrorlines lw 2 title 'Post-LN', '' every ::1 using 1:4:5 with yerrorlines lw 2 title 'Pre-LN'
unset multiplot
