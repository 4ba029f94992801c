# made by studies/anatomy_summary.py: curves.csv -> extremes.png
set terminal pngcairo size 1400,900 font ',10' noenhanced
set output 'extremes.png'
set datafile separator ','
set logscale xy
set key top left
set multiplot layout 2,2 title 'lm: extreme eigenvalues at initialisation (mean and sd over seeds)'
set title 'H_top, |H_bottom| against L'
set xlabel 'L'
plot 'curves.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'post' && strcol(3) eq 'layernorm' && strcol(4) eq 'none' && strcol(7) eq 'H_top' && $6 == 32 ? $5 : NaN):(abs($8)):9 with yerrorlines pt 7 title 'H_top post', \
     'curves.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'pre' && strcol(3) eq 'layernorm' && strcol(4) eq 'none' && strcol(7) eq 'H_top' && $6 == 32 ? $5 : NaN):(abs($8)):9 with yerrorlines pt 5 title 'H_top pre', \
     'curves.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'post' && strcol(3) eq 'layernorm' && strcol(4) eq 'none' && strcol(7) eq 'H_bottom' && $6 == 32 ? $5 : NaN):(abs($8)):9 with yerrorlines pt 7 title 'H_bottom post', \
     'curves.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'pre' && strcol(3) eq 'layernorm' && strcol(4) eq 'none' && strcol(7) eq 'H_bottom' && $6 == 32 ? $5 : NaN):(abs($8)):9 with yerrorlines pt 5 title 'H_bottom pre'
set title 'G_top, |F_bottom| against L'
set xlabel 'L'
plot 'curves.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'post' && strcol(3) eq 'layernorm' && strcol(4) eq 'none' && strcol(7) eq 'G_top' && $6 == 32 ? $5 : NaN):(abs($8)):9 with yerrorlines pt 7 title 'G_top post', \
     'curves.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'pre' && strcol(3) eq 'layernorm' && strcol(4) eq 'none' && strcol(7) eq 'G_top' && $6 == 32 ? $5 : NaN):(abs($8)):9 with yerrorlines pt 5 title 'G_top pre', \
     'curves.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'post' && strcol(3) eq 'layernorm' && strcol(4) eq 'none' && strcol(7) eq 'F_bottom' && $6 == 32 ? $5 : NaN):(abs($8)):9 with yerrorlines pt 7 title 'F_bottom post', \
     'curves.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'pre' && strcol(3) eq 'layernorm' && strcol(4) eq 'none' && strcol(7) eq 'F_bottom' && $6 == 32 ? $5 : NaN):(abs($8)):9 with yerrorlines pt 5 title 'F_bottom pre'
set title 'H_top, |H_bottom| against d'
set xlabel 'd'
plot 'curves.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'post' && strcol(3) eq 'layernorm' && strcol(4) eq 'none' && strcol(7) eq 'H_top' && $5 == 4 ? $6 : NaN):(abs($8)):9 with yerrorlines pt 7 title 'H_top post', \
     'curves.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'pre' && strcol(3) eq 'layernorm' && strcol(4) eq 'none' && strcol(7) eq 'H_top' && $5 == 4 ? $6 : NaN):(abs($8)):9 with yerrorlines pt 5 title 'H_top pre', \
     'curves.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'post' && strcol(3) eq 'layernorm' && strcol(4) eq 'none' && strcol(7) eq 'H_bottom' && $5 == 4 ? $6 : NaN):(abs($8)):9 with yerrorlines pt 7 title 'H_bottom post', \
     'curves.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'pre' && strcol(3) eq 'layernorm' && strcol(4) eq 'none' && strcol(7) eq 'H_bottom' && $5 == 4 ? $6 : NaN):(abs($8)):9 with yerrorlines pt 5 title 'H_bottom pre'
set title 'G_top, |F_bottom| against d'
set xlabel 'd'
plot 'curves.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'post' && strcol(3) eq 'layernorm' && strcol(4) eq 'none' && strcol(7) eq 'G_top' && $5 == 4 ? $6 : NaN):(abs($8)):9 with yerrorlines pt 7 title 'G_top post', \
     'curves.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'pre' && strcol(3) eq 'layernorm' && strcol(4) eq 'none' && strcol(7) eq 'G_top' && $5 == 4 ? $6 : NaN):(abs($8)):9 with yerrorlines pt 5 title 'G_top pre', \
     'curves.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'post' && strcol(3) eq 'layernorm' && strcol(4) eq 'none' && strcol(7) eq 'F_bottom' && $5 == 4 ? $6 : NaN):(abs($8)):9 with yerrorlines pt 7 title 'F_bottom post', \
     'curves.csv' skip 1 using (strcol(1) eq 'lm' && strcol(2) eq 'pre' && strcol(3) eq 'layernorm' && strcol(4) eq 'none' && strcol(7) eq 'F_bottom' && $5 == 4 ? $6 : NaN):(abs($8)):9 with yerrorlines pt 5 title 'F_bottom pre'
unset multiplot
