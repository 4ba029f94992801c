# made by studies/anatomy_summary.py: layers.csv -> blocknorms.png
set terminal pngcairo size 1200,500 font ',10' noenhanced
set output 'blocknorms.png'
set datafile separator ','
set logscale y
set format y '%g'
set key outside right
set xlabel 'layer'
set ylabel '||H_bb||_F'
set multiplot layout 1,2 title 'lm, L = 24: per-layer Hessian block norms (Ormaniec et al. heterogeneity)'
set title 'post-LN'
plot 'layers.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'post' && strcol(7) eq 'Q' && strcol(8) eq 'H' ? $6 : NaN):9:10 with yerrorlines pt 1 title 'Q', \
     'layers.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'post' && strcol(7) eq 'K' && strcol(8) eq 'H' ? $6 : NaN):9:10 with yerrorlines pt 2 title 'K', \
     'layers.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'post' && strcol(7) eq 'V' && strcol(8) eq 'H' ? $6 : NaN):9:10 with yerrorlines pt 4 title 'V', \
     'layers.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'post' && strcol(7) eq 'O' && strcol(8) eq 'H' ? $6 : NaN):9:10 with yerrorlines pt 6 title 'O', \
     'layers.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'post' && strcol(7) eq 'FFN1' && strcol(8) eq 'H' ? $6 : NaN):9:10 with yerrorlines pt 8 title 'FFN1', \
     'layers.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'post' && strcol(7) eq 'FFN2' && strcol(8) eq 'H' ? $6 : NaN):9:10 with yerrorlines pt 10 title 'FFN2'
set title 'pre-LN'
plot 'layers.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'pre' && strcol(7) eq 'Q' && strcol(8) eq 'H' ? $6 : NaN):9:10 with yerrorlines pt 1 title 'Q', \
     'layers.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'pre' && strcol(7) eq 'K' && strcol(8) eq 'H' ? $6 : NaN):9:10 with yerrorlines pt 2 title 'K', \
     'layers.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'pre' && strcol(7) eq 'V' && strcol(8) eq 'H' ? $6 : NaN):9:10 with yerrorlines pt 4 title 'V', \
     'layers.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'pre' && strcol(7) eq 'O' && strcol(8) eq 'H' ? $6 : NaN):9:10 with yerrorlines pt 6 title 'O', \
     'layers.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'pre' && strcol(7) eq 'FFN1' && strcol(8) eq 'H' ? $6 : NaN):9:10 with yerrorlines pt 8 title 'FFN1', \
     'layers.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'pre' && strcol(7) eq 'FFN2' && strcol(8) eq 'H' ? $6 : NaN):9:10 with yerrorlines pt 10 title 'FFN2'
unset multiplot
