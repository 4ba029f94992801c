# Expand the man page markers '.\" @OPTIONS@' and '.\" @SYNOPSIS@': the
# OPTIONS section of the command the page is for (lnkit-CMD.1), generated from
# its option table, and its SYNOPSIS, the usage of its --help, by the program
# doc (awk -v doc=build/tools/cli_doc).
# usage: awk -v doc=CLI_DOC -f tools/manpage.awk man/PAGE.1 > OUT
/^\.\\" @(OPTIONS|SYNOPSIS)@$/ {
    cmd = FILENAME
    sub(/.*\/lnkit-/, "", cmd)
    sub(/\.1$/, "", cmd)
    run = doc ($0 ~ /SYNOPSIS/ ? " --synopsis " : " ") cmd
    n = 0
    while ((run | getline line) > 0) { print line; n++ }
    if (close(run) != 0 || n == 0) {
        print "manpage.awk: " run " failed" > "/dev/stderr"; exit 1
    }
    next
}
{ print }
