/* A run holds its checkpoint (issue 30, item 1) and the checkpoint records
 * what fixes its rounding (item 10).
 *
 *  - the files beside a checkpoint (lnk_ckpt_file): rows files, lock, the
 *    glob of its temporaries with the path's own glob characters escaped;
 *  - the lock: a second holder is refused naming the first (pid, host),
 *    also in the same process (open file description locks); released, the
 *    lock file is gone and the lock can be taken again; a holder killed by
 *    SIGKILL leaves its lock file, which the next one takes over;
 *    lnk_ckpt_open takes the lock itself (NULL) or uses the caller's, and
 *    refuses while another holds it, leaving the holder's files alone;
 *  - the command line (tests/test_robust_ckpt.sh): two processes at once on
 *    one --checkpoint of eigs, trace and density, SIGKILL and resume, a
 *    resume on another BLAS kernel or thread count, --resume-anywhere. */
#include "testutil.h"
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "lnkit/checkpoint.h"

static void test_file_names(void **s)
{
    (void)s;
    char *p = lnk_ckpt_file("d/ck", LNK_CKPT_ROWS, 0, 1);
    assert_string_equal(p, "d/ck.basis");
    free(p);
    p = lnk_ckpt_file("d/ck", LNK_CKPT_ROWS, 2, 3);
    assert_string_equal(p, "d/ck.basis.2");
    free(p);
    p = lnk_ckpt_file("d/ck", LNK_CKPT_LOCK, 0, 1);
    assert_string_equal(p, "d/ck.lock");
    free(p);
    p = lnk_ckpt_file("c*[1]?\\", LNK_CKPT_TEMPS, 0, 1);
    assert_string_equal(p, "c\\*\\[1]\\?\\\\.tmp.??????");
    free(p);
}

static const char *ckpath(const char *name)
{
    static char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", tu_path(name));
    return buf;
}

static void test_lock(void **s)
{
    (void)s;
    char path[PATH_MAX], lock[PATH_MAX + 8], host[256], want[400];
    snprintf(path, sizeof path, "%s", ckpath("lk"));
    snprintf(lock, sizeof lock, "%s.lock", path);
    gethostname(host, sizeof host);
    lnk_ckpt_lock *a = NULL, *b = NULL;
    assert_int_equal(lnk_ckpt_lock_take(&a, path, "eigs"), LNK_OK);
    assert_non_null(a);
    assert_string_equal(lnk_ckpt_lock_path(a), path);
    assert_int_equal(access(lock, F_OK), 0);
    /* a second holder, here in the same process: refused, naming the first */
    assert_int_equal(lnk_ckpt_lock_take(&b, path, "trace"), LNK_EIO);
    assert_null(b);
    snprintf(want, sizeof want, "is in use by another run (pid %ld on host %s, lnkit eigs, since ",
             (long)getpid(), host);
    if (!strstr(lnk_errmsg(), want) || !strstr(lnk_errmsg(), "trace: checkpoint "))
        fail_msg("message: %s", lnk_errmsg());
    /* released: the lock file goes, and the lock can be taken again */
    lnk_ckpt_lock_release(a);
    assert_int_equal(access(lock, F_OK), -1);
    assert_int_equal(lnk_ckpt_lock_take(&b, path, "trace"), LNK_OK);
    lnk_ckpt_lock_release(b);
    lnk_ckpt_lock_release(NULL);
}

/* A child takes the lock and is killed by SIGKILL: its lock file stays, its
 * lock does not. */
static void test_lock_killed_holder(void **s)
{
    (void)s;
    char path[PATH_MAX], lock[PATH_MAX + 8];
    snprintf(path, sizeof path, "%s", ckpath("killed"));
    snprintf(lock, sizeof lock, "%s.lock", path);
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        lnk_ckpt_lock *lk;
        char c = lnk_ckpt_lock_take(&lk, path, "eigs") == LNK_OK ? 'y' : 'n';
        if (write(fd[1], &c, 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    char c = 0;
    assert_int_equal(read(fd[0], &c, 1), 1);
    assert_int_equal(c, 'y');
    lnk_ckpt_lock *b = NULL;
    assert_int_equal(lnk_ckpt_lock_take(&b, path, "eigs"), LNK_EIO);
    char want[64];
    snprintf(want, sizeof want, "(pid %ld on host ", (long)pid);
    if (!strstr(lnk_errmsg(), want))
        fail_msg("message: %s", lnk_errmsg());
    kill(pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    assert_int_equal(access(lock, F_OK), 0); /* left behind, unlocked */
    assert_int_equal(lnk_ckpt_lock_take(&b, path, "eigs"), LNK_OK);
    lnk_ckpt_lock_release(b);
    close(fd[0]);
    close(fd[1]);
}

static void make_id(lnk_ckpt_id *id)
{
    memset(id, 0, sizeof *id);
    assert_int_equal(lnk_ckpt_id_add(id, "--probes", "%d", 12), LNK_OK);
    assert_int_equal(lnk_ckpt_id_add_env(id, "the BLAS kernel", "%s", "K1"), LNK_OK);
}

/* lnk_ckpt_open: its own lock (NULL) or the caller's; refused while another
 * holds the checkpoint, before it reads or removes any of its files. */
static void test_open_locked(void **s)
{
    (void)s;
    char path[PATH_MAX], tmp[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s", ckpath("open"));
    lnk_ckpt_id id;
    make_id(&id);
    lnk_ckpt *ck = NULL, *ck2 = NULL;
    assert_int_equal(lnk_ckpt_open(&ck, NULL, path, "trace", &id, LNK_CKPT_TRACE, 4, 8, 0), LNK_OK);
    /* a save's temporary file, which an open removes: not while another holds it */
    snprintf(tmp, sizeof tmp, "%s.tmp.abcdef", path);
    tu_write_file(tmp, "x", 1);
    assert_int_equal(lnk_ckpt_open(&ck2, NULL, path, "trace", &id, LNK_CKPT_TRACE, 4, 8, 0),
                     LNK_EIO);
    assert_null(ck2);
    assert_non_null(strstr(lnk_errmsg(), "is in use by another run"));
    assert_int_equal(access(tmp, F_OK), 0);
    lnk_ckpt_close(ck);
    /* the caller's lock: held across the open and the close */
    lnk_ckpt_lock *lk;
    assert_int_equal(lnk_ckpt_lock_take(&lk, path, "trace"), LNK_OK);
    assert_int_equal(lnk_ckpt_open(&ck, lk, path, "trace", &id, LNK_CKPT_TRACE, 4, 8, 0), LNK_OK);
    assert_int_equal(access(tmp, F_OK), -1); /* removed, by the holder */
    lnk_ckpt_close(ck);
    assert_int_equal(lnk_ckpt_open(&ck2, NULL, path, "trace", &id, LNK_CKPT_TRACE, 4, 8, 0),
                     LNK_EIO); /* still held by lk */
    /* a lock of another path is refused */
    char other[PATH_MAX + 4];
    snprintf(other, sizeof other, "%s2", path);
    assert_int_equal(lnk_ckpt_open(&ck2, lk, other, "trace", &id, LNK_CKPT_TRACE, 4, 8, 0),
                     LNK_EINVAL);
    lnk_ckpt_lock_release(lk);
    /* no state saved yet: another environment may start it afresh */
    lnk_ckpt_id id2;
    memset(&id2, 0, sizeof id2);
    assert_int_equal(lnk_ckpt_id_add(&id2, "--probes", "%d", 12), LNK_OK);
    assert_int_equal(lnk_ckpt_id_add_env(&id2, "the BLAS kernel", "%s", "K2"), LNK_OK);
    assert_int_equal(lnk_ckpt_open(&ck, NULL, path, "trace", &id2, LNK_CKPT_TRACE, 4, 8, 0),
                     LNK_OK);
    assert_int_equal(lnk_ckpt_resumed(ck), 0);
    assert_string_equal(lnk_ckpt_moved(ck), "");
    assert_int_equal(lnk_ckpt_remove(ck), LNK_OK);
    lnk_ckpt_close(ck);
    lnk_ckpt_id_free(&id);
    lnk_ckpt_id_free(&id2);
}

static void test_cli(void **s)
{
    (void)s;
    tu_run_script("test_robust_ckpt.sh");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_names),  cmocka_unit_test(test_lock),
        cmocka_unit_test(test_lock_killed_holder), cmocka_unit_test(test_open_locked),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
