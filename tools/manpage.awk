# Expand the man page includes: a line '.\" @INCLUDE NAME@' becomes the
# contents of man/NAME.roff (the options that several commands share).
# usage: awk -f tools/manpage.awk man/PAGE.1 > OUT
/^\.\\" @INCLUDE [a-z-]+@$/ {
    f = $3
    sub(/@$/, "", f)
    f = "man/" f ".roff"
    n = 0
    while ((getline line < f) > 0) { print line; n++ }
    close(f)
    if (n == 0) { print "manpage.awk: " f " missing or empty" > "/dev/stderr"; exit 1 }
    next
}
{ print }
