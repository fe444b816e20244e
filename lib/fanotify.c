/* SPDX-License-Identifier: MIT */
/*
 * fanotify backend: a group reporting file handles (FID mode), kernel
 * watches keyed by fsid + file handle, tree directories covered by one
 * mark per filesystem. Needs CAP_SYS_ADMIN (filesystem marks) and
 * CAP_DAC_READ_SEARCH (open_by_handle_at) and Linux 5.17 (FAN_RENAME,
 * FAN_REPORT_TARGET_FID); without them init fails -EPERM / -EOPNOTSUPP and
 * AUTO uses inotify. AUTO picks this backend only for FSNW_OPEN_BIG_TREES:
 * the list below is why.
 *
 * What inotify gives and this backend cannot:
 * - IN_EXCL_UNLINK: fanotify has no such mark flag. FSNW_WATCH_EXCL_UNLINK
 *   is accepted and has no effect: events from unlinked children still come.
 * - IN_UNMOUNT / the IN_IGNORED that follows it: fanotify says nothing when
 *   a filesystem with marks goes away. (We also hold an fd on a mount root
 *   per filesystem, see struct fan_fs, so a plain umount of it is refused
 *   until the handle is closed.)
 * - Events on a subdirectory itself (ATTRIB, OPEN, ...) reach the watch of
 *   its parent with the subdirectory's name in inotify; fanotify reports
 *   them as the subdirectory's own, so only a watch on it hears them.
 * - Exact order and counts of events the kernel merged: fanotify merges an
 *   unread event into an earlier one on the same object whatever their
 *   types; see fan_bits for the order a merged record is split in.
 * Objects on filesystems without decodable file handles fail -EOPNOTSUPP:
 * removing their mark would need an fd held per watch.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mem.h"
#include "backend.h"
#include "fanotify.h"
#include "handle.h"
#include "kwatch.h"
#include "sys.h"

#ifndef AT_HANDLE_MNT_ID_UNIQUE
#define AT_HANDLE_MNT_ID_UNIQUE 0x001 /* Linux 6.12: name_to_handle_at's mount id is u64 */
#endif

#define FSID_LEN 8
/* struct kkey.bflags: the key is fan_identify's, of the object at the path
 * on a mount seen before; the mark may then go by path (mark_named). */
#define FAN_KEY_IDENTIFIED 0x80u
/* Bits only a directory mark may carry (the kernel says ENOTDIR otherwise). */
#define FAN_DIRONLY (FAN_CREATE | FAN_DELETE | FAN_MOVE | FAN_RENAME | FAN_ONDIR | \
		     FAN_EVENT_ON_CHILD)
#define FAN_EVENTS (FAN_ACCESS | FAN_MODIFY | FAN_ATTRIB | FAN_CLOSE | FAN_OPEN | FAN_MOVE | \
		    FAN_CREATE | FAN_DELETE | FAN_DELETE_SELF | FAN_MOVE_SELF | FAN_RENAME)
/* Everything a mark of ours can hold: what a remove takes away. */
#define FAN_ALL_OURS (FAN_EVENTS | FAN_ONDIR | FAN_EVENT_ON_CHILD)
/* The largest record: metadata, two directory fids with names (a rename), a fid. */
#define FAN_FID_MAX (sizeof(struct fanotify_event_info_fid) + sizeof(struct file_handle) + \
		     MAX_HANDLE_SZ + 4)
#define FAN_RECORD_MAX (sizeof(struct fanotify_event_metadata) + \
			3 * FAN_FID_MAX + 2 * (NAME_MAX + 1))

/*
 * A filesystem we mark on. mntfd is an fd on the root directory of a mount
 * of it, for open_by_handle_at (a mark is removed through its handle: the
 * path may have moved) and for the filesystem mark. A mount root, not the
 * watched object, so that our reference never delays a watched object's
 * deletion (and its FAN_DELETE_SELF).
 */
struct fan_fs {
	unsigned char fsid[FSID_LEN];
	int mntfd;
	bool no_cover;   /* a filesystem mark failed here: mark tree directories instead */
	uint64_t fsmask; /* what our filesystem mark reports; 0: none */
};

/* A mount seen, by unique id, so a mark needs no statfs to learn the fsid. */
struct fan_mnt {
	uint64_t id;
	struct fan_fs *fs;
};

/*
 * Mark operations run without the handle's lock, concurrently: lock guards
 * the filesystem and mount lists (entries are never freed before fini, so a
 * struct fan_fs pointer stays valid) and each filesystem's mark state.
 */
struct fan {
	pthread_mutex_t lock;
	struct fan_fs **fs;
	size_t nfs;
	struct fan_mnt *mnt;
	size_t nmnt;
	uint32_t cookie;    /* the last rename cookie handed out (decode, handle lock) */
	atomic_bool no_unique_mnt; /* the kernel predates AT_HANDLE_MNT_ID_UNIQUE: statfs per call */
};

static bool has_cap(struct fsnw *w, int cap)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	if (sys_capget(&w->st.sys_other, &hdr, data) < 0)
		return false;
	return data[CAP_TO_INDEX(cap)].effective & CAP_TO_MASK(cap);
}

static int fan_init(struct fsnw *w)
{
	struct fan *f = mem_zalloc(sizeof(*f));
	int fd;

	if (!f)
		return -ENOMEM;
	/*
	 * FAN_UNLIMITED_MARKS needs CAP_SYS_ADMIN in the initial user
	 * namespace, which is our policy: without it, unprivileged fanotify
	 * would open but could not mark filesystems. The queue stays bounded
	 * so that its overflow is reported. EINVAL: the kernel lacks a flag
	 * (FAN_REPORT_TARGET_FID came with FAN_RENAME in 5.17).
	 */
	fd = sys_fanotify_init(&w->st.sys_fanotify_init,
			       FAN_CLASS_NOTIF | FAN_NONBLOCK | FAN_REPORT_DFID_NAME_TARGET |
			       FAN_UNLIMITED_MARKS, O_RDONLY | O_LARGEFILE);
	if (fd < 0) {
		mem_free(f);
		return fd == -EINVAL || fd == -ENOSYS ? -EOPNOTSUPP : fd;
	}
	if (!has_cap(w, CAP_DAC_READ_SEARCH)) {
		sys_close(&w->st.sys_other, fd);
		mem_free(f);
		return -EPERM;
	}
	pthread_mutex_init(&f->lock, NULL);
	w->kfd = fd;
	w->be_state = f;
	return 0;
}

static void fan_fini(struct fsnw *w)
{
	struct fan *f = w->be_state;

	if (!f)
		return;
	for (size_t i = 0; i < f->nfs; i++) {
		sys_close(&w->st.sys_other, f->fs[i]->mntfd);
		mem_free(f->fs[i]);
	}
	mem_free(f->fs);
	mem_free(f->mnt);
	pthread_mutex_destroy(&f->lock);
	mem_free(f);
	w->be_state = NULL;
}

/*
 * Mark or unmark the object fd (O_PATH) names. fanotify_mark does not take
 * an O_PATH fd alone: a directory is reached as "." under it, anything else
 * through its /proc/self/fd link, which leads to that very object.
 */
static int mark_fd(struct fsnw *w, unsigned int op, uint64_t mask, int fd, bool isdir,
		   struct sys_tally *t)
{
	char proc[32];
	int ret;

	if (isdir) {
		ret = fanotify_mark(w->kfd, op, mask, fd, ".");
	} else {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		ret = fanotify_mark(w->kfd, op, mask, AT_FDCWD, proc);
	}
	t->fanotify_mark++;
	return ret < 0 ? -errno : 0;
}

/* The handle of (fd, path) and the unique id of its mount (0 if unknown). */
static int get_handle(struct fsnw *w, int fd, const char *path, int flags, struct fh_buf *h,
		      uint64_t *mnt, struct sys_tally *t)
{
	struct fan *f = w->be_state;
	int ret, mid;

	for (;;) {
		h->fh.handle_bytes = MAX_HANDLE_SZ;
		*mnt = 0;
		if (atomic_load(&f->no_unique_mnt)) {
			ret = sys_name_to_handle_at(&t->name_to_handle_at, fd, path, &h->fh, &mid,
						    flags);
		} else {
			ret = sys_name_to_handle_at(&t->name_to_handle_at, fd, path, &h->fh,
						    (int *)(void *)mnt,
						    flags | AT_HANDLE_MNT_ID_UNIQUE);
		}
		if (ret == 0)
			return 0;
		if (ret != -EINVAL || atomic_load(&f->no_unique_mnt))
			break;
		atomic_store(&f->no_unique_mnt, true);
	}
	/* EOPNOTSUPP: no decodable handles here (see the top of the file). */
	return ret == -EOVERFLOW ? -EOPNOTSUPP : ret;
}

struct statx_id {
	uint64_t mnt, ino;
	uint32_t maj, min;
};

static int stat_id(int fd, struct statx_id *id, struct sys_tally *t)
{
	struct statx stx;
	int ret = sys_statx(&t->other, fd, "", AT_EMPTY_PATH, STATX_INO | STATX_MNT_ID, &stx);

	if (ret < 0)
		return ret;
	id->mnt = stx.stx_mnt_id;
	id->ino = stx.stx_ino;
	id->maj = stx.stx_dev_major;
	id->min = stx.stx_dev_minor;
	return 0;
}

/*
 * Climb from the directory fd to the root of its mount; returns a new fd
 * on it, opened for reading: open_by_handle_at refuses an O_PATH mount fd.
 */
static int open_mount_root(int fd, struct sys_tally *t)
{
	struct statx_id cur = { 0 }, up = { 0 }; /* set before use; -O3 cannot tell */
	int curfd, upfd, ret;

	curfd = sys_dup(&t->other, fd);
	if (curfd < 0)
		return curfd;
	ret = stat_id(curfd, &cur, t);
	for (int depth = 0; ret == 0 && depth < PATH_MAX / 2; depth++) {
		upfd = sys_openat(&t->other, curfd, "..", O_PATH | O_DIRECTORY);
		if (upfd < 0) {
			ret = upfd;
			break;
		}
		ret = stat_id(upfd, &up, t);
		/* ".." of a mount root is in the mount above; of "/" it is "/". */
		if (ret < 0 || up.mnt != cur.mnt ||
		    (up.ino == cur.ino && up.maj == cur.maj && up.min == cur.min)) {
			sys_close(&t->other, upfd);
			break;
		}
		sys_close(&t->other, curfd);
		curfd = upfd;
		cur = up;
	}
	if (ret == 0) {
		/* Opening it is seen (FAN_OPEN of that directory), once per
		 * filesystem and handle. */
		ret = sys_openat(&t->other, curfd, ".", O_RDONLY | O_DIRECTORY);
	}
	sys_close(&t->other, curfd);
	return ret;
}

/* The directory path is in (relative to dirfd), as an O_PATH fd. */
static int open_parent(int dirfd, const char *path, struct sys_tally *t)
{
	char buf[PATH_MAX];
	size_t len = strnlen(path, sizeof(buf));
	char *slash;

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	while (len > 1 && buf[len - 1] == '/')
		buf[--len] = '\0';
	slash = strrchr(buf, '/');
	if (!slash)
		strcpy(buf, ".");
	else if (slash == buf)
		buf[1] = '\0';
	else
		*slash = '\0';
	return sys_openat(&t->other, dirfd, buf, O_PATH | O_DIRECTORY);
}

/* f->lock held. */
static struct fan_fs *fs_by_fsid(struct fan *f, const unsigned char *fsid)
{
	for (size_t i = 0; i < f->nfs; i++)
		if (!memcmp(f->fs[i]->fsid, fsid, FSID_LEN))
			return f->fs[i];
	return NULL;
}

/* The filesystem of a key we made (fsid first), or NULL: never marked through us. */
static struct fan_fs *fs_of_key(struct fan *f, const unsigned char *key, size_t len)
{
	struct fan_fs *fs;

	if (len < FSID_LEN)
		return NULL;
	pthread_mutex_lock(&f->lock);
	fs = fs_by_fsid(f, key);
	pthread_mutex_unlock(&f->lock);
	return fs;
}

/*
 * Record a new filesystem: find a mount root fd for it, starting from
 * objfd (the watched object, O_PATH) or, for a non-directory, its parent.
 * f->lock held: the first sight of a filesystem is rare, and another
 * thread must not record it twice.
 */
static int fs_new(struct fan *f, const unsigned char *fsid, int objfd, bool isdir, int dirfd,
		  const char *path, struct fan_fs **out, struct sys_tally *t)
{
	struct fan_fs **arr, *fs;
	struct statfs sfs;
	int startfd = objfd, rootfd;

	arr = mem_realloc(f->fs, (f->nfs + 1) * sizeof(*arr));
	if (!arr)
		return -ENOMEM;
	f->fs = arr;
	fs = mem_zalloc(sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	if (!isdir) {
		startfd = open_parent(dirfd, path, t);
		if (startfd < 0) {
			mem_free(fs);
			return startfd;
		}
	}
	rootfd = open_mount_root(startfd, t);
	if (startfd != objfd)
		sys_close(&t->other, startfd);
	if (rootfd < 0) {
		mem_free(fs);
		return rootfd;
	}
	if (sys_fstatfs(&t->other, rootfd, &sfs) < 0 || memcmp(&sfs.f_fsid, fsid, FSID_LEN)) {
		/* The object is a mount of its own (a bind-mounted file): no
		 * directory above it is on its filesystem. */
		sys_close(&t->other, rootfd);
		mem_free(fs);
		return -EOPNOTSUPP;
	}
	memcpy(fs->fsid, fsid, FSID_LEN);
	fs->mntfd = rootfd;
	f->fs[f->nfs++] = fs;
	*out = fs;
	return 0;
}

/*
 * The filesystem of the object at (dirfd, path), also open as objfd (or
 * -1: opened here if needed), on the mount with unique id mnt (0: unknown).
 */
static int fs_of(struct fsnw *w, uint64_t mnt, int objfd, bool isdir, int dirfd,
		 const char *path, uint32_t flags, struct fan_fs **out, struct sys_tally *t)
{
	struct fan *f = w->be_state;
	unsigned char fsid[FSID_LEN];
	struct fan_mnt *m;
	struct statfs sfs;
	int fd = objfd, ret = 0;

	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; mnt && i < f->nmnt; i++) {
		if (f->mnt[i].id == mnt) {
			*out = f->mnt[i].fs;
			pthread_mutex_unlock(&f->lock);
			return 0;
		}
	}
	pthread_mutex_unlock(&f->lock);
	if (fd < 0) {
		fd = sys_openat(&t->other, dirfd, path,
				O_PATH | (flags & FSNW_WATCH_DONT_FOLLOW ? O_NOFOLLOW : 0));
		if (fd < 0)
			return fd;
	}
	ret = sys_fstatfs(&t->other, fd, &sfs);
	if (ret < 0)
		goto out;
	memcpy(fsid, &sfs.f_fsid, FSID_LEN);
	pthread_mutex_lock(&f->lock);
	*out = fs_by_fsid(f, fsid);
	if (!*out)
		ret = fs_new(f, fsid, fd, isdir, dirfd, path, out, t);
	if (ret == 0 && mnt) {
		m = mem_realloc(f->mnt, (f->nmnt + 1) * sizeof(*m));
		if (m) { /* without room we only statfs again next time */
			f->mnt = m;
			f->mnt[f->nmnt].id = mnt;
			f->mnt[f->nmnt].fs = *out;
			f->nmnt++;
		}
	}
	pthread_mutex_unlock(&f->lock);
out:
	if (fd != objfd)
		sys_close(&t->other, fd);
	return ret;
}

/* Key bytes: fsid, then struct file_handle as the kernel reports it in events. */
static void make_key(const struct fan_fs *fs, const struct fh_buf *h, struct kkey *key)
{
	memset(key, 0, offsetof(struct kkey, bytes));
	key->wd = -1;
	memcpy(key->bytes, fs->fsid, FSID_LEN);
	memcpy(key->bytes + FSID_LEN, &h->fh, sizeof(h->fh) + h->fh.handle_bytes);
	key->len = FSID_LEN + sizeof(h->fh) + h->fh.handle_bytes;
}

/* FSNW_* bits of mask as the FAN_* mask of a mark on a directory or not. */
static uint64_t fan_mask(uint32_t mask, bool isdir)
{
	/* Always DELETE_SELF: the kernel drops the mark of a deleted object
	 * without a word otherwise, and kwatch.c must hear of it. */
	uint64_t m = FAN_DELETE_SELF;

	for (size_t i = 0; i < FAN_NBITS; i++)
		if (mask & fan_bits[i].fsnw)
			m |= fan_bits[i].fan;
	/* A rename comes as one FAN_RENAME record naming both ends, which
	 * gives inotify's MOVED_FROM/MOVED_TO pair. */
	if (m & FAN_MOVE)
		m = (m & ~(uint64_t)FAN_MOVE) | FAN_RENAME;
	if (isdir)
		return m | FAN_ONDIR | FAN_EVENT_ON_CHILD;
	return m & ~(uint64_t)FAN_DIRONLY;
}

static int fan_identify(struct fsnw *w, int dirfd, const char *path, uint32_t flags,
			struct kkey *key, struct sys_tally *t);

/*
 * Mark the object at path, whose key fan_identify found there: by path, no
 * fd. The type decides the mask, and a directory's mask is refused for
 * anything else (ENOTDIR), so a directory takes one call and a file two.
 * The path may have named another object by the time of the mark, so the
 * handle it names afterwards must still be the one found before; if not
 * (-EAGAIN), the caller marks through an fd, and the object the path named
 * in between may keep this mark, whose events are dropped as stale.
 */
static int mark_named(struct fsnw *w, int dirfd, const char *path, uint32_t mask,
		      uint32_t flags, struct kkey *key, struct sys_tally *t)
{
	unsigned int op = FAN_MARK_ADD |
			  (flags & FSNW_WATCH_DONT_FOLLOW ? FAN_MARK_DONT_FOLLOW : 0);
	struct kkey after;
	bool isdir = true;
	int ret;

	ret = fanotify_mark(w->kfd, op, fan_mask(mask, true), dirfd, path);
	t->fanotify_mark++;
	if (ret < 0 && errno == ENOTDIR && !(flags & FSNW_WATCH_ONLYDIR)) {
		isdir = false;
		ret = fanotify_mark(w->kfd, op, fan_mask(mask, false), dirfd, path);
		t->fanotify_mark++;
	}
	if (ret < 0)
		return -errno;
	if (fan_identify(w, dirfd, path, flags, &after, t) < 0 || after.len != key->len ||
	    memcmp(after.bytes, key->bytes, key->len))
		return -EAGAIN;
	key->bflags = isdir ? 0 : KKEY_NONDIR;
	return 0;
}

static int fan_mark(struct fsnw *w, int dirfd, const char *path, uint32_t mask, uint32_t flags,
		    int replace, struct kkey *key, struct sys_tally *t)
{
	int oflags = O_PATH | (flags & FSNW_WATCH_DONT_FOLLOW ? O_NOFOLLOW : 0);
	struct fan_fs *fs;
	struct fh_buf h;
	bool isdir = true;
	uint64_t mnt;
	int fd, ret;

	/* Marks here only grow, so adding is what replacing means too; and
	 * FSNW_WATCH_EXCL_UNLINK has no fanotify counterpart (see the top). */
	(void)replace;
	if (key->bflags & FAN_KEY_IDENTIFIED) {
		ret = mark_named(w, dirfd, path, mask, flags, key, t);
		if (ret != -EAGAIN)
			return ret;
	}
	/*
	 * Otherwise (a mount not seen yet, or the path changed under
	 * mark_named), one O_PATH fd for handle and mark, so both are of the
	 * same object even if the path changes meanwhile. Directories first:
	 * they are most of what is watched, and their mark takes directory
	 * bits.
	 */
	fd = sys_openat(&t->other, dirfd, path, oflags | O_DIRECTORY);
	if (fd == -ENOTDIR && !(flags & FSNW_WATCH_ONLYDIR)) {
		isdir = false;
		fd = sys_openat(&t->other, dirfd, path, oflags);
	}
	if (fd < 0)
		return fd;
	ret = get_handle(w, fd, "", AT_EMPTY_PATH, &h, &mnt, t);
	if (ret == 0)
		ret = fs_of(w, mnt, fd, isdir, dirfd, path, flags, &fs, t);
	if (ret == 0)
		ret = mark_fd(w, FAN_MARK_ADD, fan_mask(mask, isdir), fd, isdir, t);
	sys_close(&t->other, fd);
	if (ret < 0)
		return ret;
	make_key(fs, &h, key);
	key->bflags = isdir ? 0 : KKEY_NONDIR;
	return 0;
}

static int fan_identify(struct fsnw *w, int dirfd, const char *path, uint32_t flags,
			struct kkey *key, struct sys_tally *t)
{
	struct fan *f = w->be_state;
	struct fan_fs *fs = NULL;
	struct fh_buf h;
	uint64_t mnt;
	int ret;

	/* Only on a mount seen before: a first sight needs mark's fd anyway
	 * (and without unique mount ids, a statfs would eat the saving). */
	if (atomic_load(&f->no_unique_mnt))
		return -EOPNOTSUPP;
	ret = get_handle(w, dirfd, path, flags & FSNW_WATCH_DONT_FOLLOW ? 0 : AT_SYMLINK_FOLLOW,
			 &h, &mnt, t);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < f->nmnt && !fs; i++)
		if (f->mnt[i].id == mnt)
			fs = f->mnt[i].fs;
	pthread_mutex_unlock(&f->lock);
	if (!fs)
		return -ENOENT;
	make_key(fs, &h, key);
	key->bflags = FAN_KEY_IDENTIFIED;
	return 0;
}

static int fan_cover(struct fsnw *w, int dirfd, const char *path, uint32_t mask, uint32_t flags,
		     struct kkey *key, struct kkey *fskey, struct sys_tally *t)
{
	struct fan *f = w->be_state;
	struct fan_fs *fs;
	struct fh_buf h;
	uint64_t mnt, want;
	int ret;

	/* No fd needed: there is no mark of this directory's own to keep
	 * consistent with its handle. */
	ret = get_handle(w, dirfd, path, flags & FSNW_WATCH_DONT_FOLLOW ? 0 : AT_SYMLINK_FOLLOW,
			 &h, &mnt, t);
	if (ret == 0)
		ret = fs_of(w, mnt, -1, true, dirfd, path, flags, &fs, t);
	if (ret < 0)
		return ret;
	/* The kernel adds what a filesystem mark needs to report names. */
	want = fan_mask(mask, true) & ~(uint64_t)FAN_EVENT_ON_CHILD;
	/* The filesystem's mark state changes under f->lock, syscall included:
	 * widening it is rare, and two threads must not race to record it. */
	pthread_mutex_lock(&f->lock);
	if (fs->no_cover) {
		ret = -EOPNOTSUPP;
	} else if ((fs->fsmask & want) != want) {
		ret = mark_fd(w, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, want, fs->mntfd, true, t);
		if (ret == 0)
			fs->fsmask |= want;
		else if (!fs->fsmask)
			/* Not on this filesystem (no fsid, a btrfs subvolume, ...):
			 * its directories get marks of their own from now on. */
			fs->no_cover = true;
	}
	pthread_mutex_unlock(&f->lock);
	if (ret < 0)
		return ret;
	make_key(fs, &h, key);
	memset(fskey, 0, offsetof(struct kkey, bytes));
	fskey->wd = -1;
	fskey->len = FSID_LEN;
	memcpy(fskey->bytes, fs->fsid, FSID_LEN);
	return 0;
}

static int fan_narrow(struct fsnw *w, const struct kwatch *kw, uint32_t mask,
		      struct sys_tally *t)
{
	struct fan *f = w->be_state;
	struct fan_fs *fs = fs_of_key(f, kw->key, kw->keylen);
	uint64_t want = fan_mask(mask, true) & ~(uint64_t)FAN_EVENT_ON_CHILD, extra;
	int ret = 0;

	if (!fs)
		return 0;
	pthread_mutex_lock(&f->lock);
	/* want keeps FAN_DELETE_SELF and FAN_ONDIR: the mark never empties. */
	extra = fs->fsmask & ~want;
	if (extra && !fs->no_cover) {
		ret = mark_fd(w, FAN_MARK_REMOVE | FAN_MARK_FILESYSTEM, extra, fs->mntfd, true, t);
		if (ret == 0)
			fs->fsmask &= ~extra;
	}
	pthread_mutex_unlock(&f->lock);
	return ret;
}

static int fan_unmark(struct fsnw *w, const struct kwatch *kw, struct sys_tally *t)
{
	struct fan *f = w->be_state;
	struct fan_fs *fs = fs_of_key(f, kw->key, kw->keylen);
	bool isdir = !(kw->bflags & KKEY_NONDIR);
	struct fh_buf h;
	uint32_t hbytes;
	int fd, ret;

	if (!fs)
		return 0; /* never marked through us */
	if (kw->keylen == FSID_LEN) {
		pthread_mutex_lock(&f->lock);
		ret = mark_fd(w, FAN_MARK_REMOVE | FAN_MARK_FILESYSTEM, FAN_ALL_OURS, fs->mntfd,
			      true, t);
		fs->fsmask = 0;
		pthread_mutex_unlock(&f->lock);
		return ret == -ENOENT ? 0 : ret;
	}
	if (kw->keylen < FSID_LEN + sizeof(h.fh))
		return -EINVAL;
	memcpy(&hbytes, kw->key + FSID_LEN, sizeof(hbytes));
	if (hbytes > MAX_HANDLE_SZ || kw->keylen != FSID_LEN + sizeof(h.fh) + hbytes)
		return -EINVAL;
	memcpy(&h, kw->key + FSID_LEN, kw->keylen - FSID_LEN);
	fd = sys_open_by_handle_at(&t->open_by_handle_at, fs->mntfd, &h.fh, O_PATH);
	if (fd < 0) /* ESTALE: the object is gone, and with it the mark */
		return fd == -ESTALE || fd == -ENOENT ? 0 : fd;
	ret = mark_fd(w, FAN_MARK_REMOVE, isdir ? FAN_ALL_OURS : FAN_ALL_OURS & ~(uint64_t)FAN_DIRONLY,
		      fd, isdir, t);
	sys_close(&t->other, fd);
	/* ENOENT: no such mark, the kernel dropped it first. */
	return ret == -ENOENT ? 0 : ret;
}

static int fan_mount_fd(struct fsnw *w, const unsigned char *key, size_t keylen)
{
	struct fan_fs *fs = fs_of_key(w->be_state, key, keylen);

	/* Never closed before fini: fan_fs entries live as long as the group. */
	return fs ? fs->mntfd : -ENOENT;
}

static size_t fan_decode(struct fsnw *w, const void *buf, size_t len, kevent_fn fn, void *arg)
{
	struct fan *f = w->be_state;

	/* FID mode: records carry no fds (metadata.fd is FAN_NOFD), nothing to close. */
	return fanotify_decode(buf, len, &f->cookie, fn, arg);
}

const struct backend fanotify_backend = {
	.id = FSNW_BACKEND_FANOTIFY,
	.name = "fanotify",
	.init = fan_init,
	.fini = fan_fini,
	.mark = fan_mark,
	.unmark = fan_unmark,
	.cover = fan_cover,
	.narrow = fan_narrow,
	.identify = fan_identify,
	.decode = fan_decode,
	.mount_fd = fan_mount_fd,
	.max_record = FAN_RECORD_MAX,
	.stable_keys = true,
};
