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

#ifndef AT_HANDLE_MNT_ID_UNIQUE
#define AT_HANDLE_MNT_ID_UNIQUE 0x001 /* Linux 6.12: name_to_handle_at's mount id is u64 */
#endif

#define FSID_LEN 8
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
	size_t fs; /* index in fan.fs */
};

struct fan {
	struct fan_fs *fs;
	size_t nfs;
	struct fan_mnt *mnt;
	size_t nmnt;
	uint32_t cookie;    /* the last rename cookie handed out */
	bool no_unique_mnt; /* the kernel predates AT_HANDLE_MNT_ID_UNIQUE: statfs per call */
};

struct fh_buf {
	struct file_handle fh;
	unsigned char bytes[MAX_HANDLE_SZ];
};

static bool has_cap(struct fsnw *w, int cap)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	w->st.sys_other++;
	if (syscall(SYS_capget, &hdr, data) < 0)
		return false;
	return data[CAP_TO_INDEX(cap)].effective & CAP_TO_MASK(cap);
}

static int fan_init(struct fsnw *w)
{
	struct fan *f = mem_zalloc(sizeof(*f));
	int fd, err;

	if (!f)
		return -ENOMEM;
	/*
	 * FAN_UNLIMITED_MARKS needs CAP_SYS_ADMIN in the initial user
	 * namespace, which is our policy: without it, unprivileged fanotify
	 * would open but could not mark filesystems. The queue stays bounded
	 * so that its overflow is reported. EINVAL: the kernel lacks a flag
	 * (FAN_REPORT_TARGET_FID came with FAN_RENAME in 5.17).
	 */
	fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK |
			   FAN_REPORT_DFID_NAME_TARGET | FAN_UNLIMITED_MARKS,
			   O_RDONLY | O_CLOEXEC | O_LARGEFILE);
	w->st.sys_fanotify_init++;
	if (fd < 0) {
		err = errno;
		mem_free(f);
		return err == EINVAL || err == ENOSYS ? -EOPNOTSUPP : -err;
	}
	if (!has_cap(w, CAP_DAC_READ_SEARCH)) {
		close(fd);
		mem_free(f);
		return -EPERM;
	}
	w->kfd = fd;
	w->be_state = f;
	return 0;
}

static void fan_fini(struct fsnw *w)
{
	struct fan *f = w->be_state;

	if (!f)
		return;
	for (size_t i = 0; i < f->nfs; i++)
		close(f->fs[i].mntfd);
	mem_free(f->fs);
	mem_free(f->mnt);
	mem_free(f);
	w->be_state = NULL;
}

/*
 * Mark or unmark the object fd (O_PATH) names. fanotify_mark does not take
 * an O_PATH fd alone: a directory is reached as "." under it, anything else
 * through its /proc/self/fd link, which leads to that very object.
 */
static int mark_fd(struct fsnw *w, unsigned int op, uint64_t mask, int fd, bool isdir)
{
	char proc[32];
	int ret;

	if (isdir) {
		ret = fanotify_mark(w->kfd, op, mask, fd, ".");
	} else {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		ret = fanotify_mark(w->kfd, op, mask, AT_FDCWD, proc);
	}
	w->st.sys_fanotify_mark++;
	return ret < 0 ? -errno : 0;
}

static void close_counted(struct fsnw *w, int fd)
{
	close(fd);
	w->st.sys_other++;
}

/* The handle of (fd, path) and the unique id of its mount (0 if unknown). */
static int get_handle(struct fsnw *w, int fd, const char *path, int flags, struct fh_buf *h,
		      uint64_t *mnt)
{
	struct fan *f = w->be_state;
	int ret, mid;

	for (;;) {
		h->fh.handle_bytes = MAX_HANDLE_SZ;
		*mnt = 0;
		w->st.sys_name_to_handle_at++;
		if (f->no_unique_mnt) {
			ret = name_to_handle_at(fd, path, &h->fh, &mid, flags);
		} else {
			ret = name_to_handle_at(fd, path, &h->fh, (int *)(void *)mnt,
						flags | AT_HANDLE_MNT_ID_UNIQUE);
		}
		if (ret == 0)
			return 0;
		if (errno != EINVAL || f->no_unique_mnt)
			break;
		f->no_unique_mnt = true;
	}
	/* EOPNOTSUPP: no decodable handles here (see the top of the file). */
	return errno == EOVERFLOW ? -EOPNOTSUPP : -errno;
}

struct statx_id {
	uint64_t mnt, ino;
	uint32_t maj, min;
};

static int stat_id(struct fsnw *w, int fd, struct statx_id *id)
{
	struct statx stx;

	w->st.sys_other++;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_INO | STATX_MNT_ID, &stx) < 0)
		return -errno;
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
static int open_mount_root(struct fsnw *w, int fd)
{
	struct statx_id cur, up;
	int curfd, upfd, ret;

	curfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	w->st.sys_other++;
	if (curfd < 0)
		return -errno;
	ret = stat_id(w, curfd, &cur);
	for (int depth = 0; ret == 0 && depth < PATH_MAX / 2; depth++) {
		upfd = openat(curfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		w->st.sys_other++;
		if (upfd < 0) {
			ret = -errno;
			break;
		}
		ret = stat_id(w, upfd, &up);
		/* ".." of a mount root is in the mount above; of "/" it is "/". */
		if (ret < 0 || up.mnt != cur.mnt ||
		    (up.ino == cur.ino && up.maj == cur.maj && up.min == cur.min)) {
			close_counted(w, upfd);
			break;
		}
		close_counted(w, curfd);
		curfd = upfd;
		cur = up;
	}
	if (ret == 0) {
		/* Opening it is seen (FAN_OPEN of that directory), once per
		 * filesystem and handle. */
		upfd = openat(curfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		w->st.sys_other++;
		ret = upfd < 0 ? -errno : upfd;
	}
	close_counted(w, curfd);
	return ret;
}

/* The directory path is in (relative to dirfd), as an O_PATH fd. */
static int open_parent(struct fsnw *w, int dirfd, const char *path)
{
	char buf[PATH_MAX];
	size_t len = strnlen(path, sizeof(buf));
	char *slash;
	int fd;

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
	fd = openat(dirfd, buf, O_PATH | O_DIRECTORY | O_CLOEXEC);
	w->st.sys_other++;
	return fd < 0 ? -errno : fd;
}

static struct fan_fs *fs_by_fsid(struct fan *f, const unsigned char *fsid)
{
	for (size_t i = 0; i < f->nfs; i++)
		if (!memcmp(f->fs[i].fsid, fsid, FSID_LEN))
			return &f->fs[i];
	return NULL;
}

/*
 * Record a new filesystem: find a mount root fd for it, starting from
 * objfd (the watched object, O_PATH) or, for a non-directory, its parent.
 */
static int fs_new(struct fsnw *w, const unsigned char *fsid, int objfd, bool isdir, int dirfd,
		  const char *path, struct fan_fs **out)
{
	struct fan *f = w->be_state;
	struct fan_fs *arr, *fs;
	struct statfs sfs;
	int startfd = objfd, rootfd;

	arr = mem_realloc(f->fs, (f->nfs + 1) * sizeof(*arr));
	if (!arr)
		return -ENOMEM;
	f->fs = arr;
	if (!isdir) {
		startfd = open_parent(w, dirfd, path);
		if (startfd < 0)
			return startfd;
	}
	rootfd = open_mount_root(w, startfd);
	if (startfd != objfd)
		close_counted(w, startfd);
	if (rootfd < 0)
		return rootfd;
	w->st.sys_other++;
	if (fstatfs(rootfd, &sfs) < 0 || memcmp(&sfs.f_fsid, fsid, FSID_LEN)) {
		/* The object is a mount of its own (a bind-mounted file): no
		 * directory above it is on its filesystem. */
		close_counted(w, rootfd);
		return -EOPNOTSUPP;
	}
	fs = &f->fs[f->nfs++];
	memset(fs, 0, sizeof(*fs));
	memcpy(fs->fsid, fsid, FSID_LEN);
	fs->mntfd = rootfd;
	*out = fs;
	return 0;
}

/*
 * The filesystem of the object at (dirfd, path), also open as objfd (or
 * -1: opened here if needed), on the mount with unique id mnt (0: unknown).
 */
static int fs_of(struct fsnw *w, uint64_t mnt, int objfd, bool isdir, int dirfd,
		 const char *path, uint32_t flags, struct fan_fs **out)
{
	struct fan *f = w->be_state;
	unsigned char fsid[FSID_LEN];
	struct fan_mnt *m;
	struct statfs sfs;
	int fd = objfd, ret = 0;

	for (size_t i = 0; mnt && i < f->nmnt; i++) {
		if (f->mnt[i].id == mnt) {
			*out = &f->fs[f->mnt[i].fs];
			return 0;
		}
	}
	if (fd < 0) {
		fd = openat(dirfd, path, O_PATH | O_CLOEXEC |
			    (flags & FSNW_WATCH_DONT_FOLLOW ? O_NOFOLLOW : 0));
		w->st.sys_other++;
		if (fd < 0)
			return -errno;
	}
	w->st.sys_other++;
	if (fstatfs(fd, &sfs) < 0) {
		ret = -errno;
		goto out;
	}
	memcpy(fsid, &sfs.f_fsid, FSID_LEN);
	*out = fs_by_fsid(f, fsid);
	if (!*out)
		ret = fs_new(w, fsid, fd, isdir, dirfd, path, out);
	if (ret == 0 && mnt) {
		m = mem_realloc(f->mnt, (f->nmnt + 1) * sizeof(*m));
		if (m) { /* without room we only statfs again next time */
			f->mnt = m;
			f->mnt[f->nmnt].id = mnt;
			f->mnt[f->nmnt].fs = (size_t)(*out - f->fs);
			f->nmnt++;
		}
	}
out:
	if (fd != objfd)
		close_counted(w, fd);
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

static int fan_mark(struct fsnw *w, int dirfd, const char *path, uint32_t mask, uint32_t flags,
		    int replace, struct kkey *key)
{
	int oflags = O_PATH | O_CLOEXEC | (flags & FSNW_WATCH_DONT_FOLLOW ? O_NOFOLLOW : 0);
	struct fan_fs *fs;
	struct fh_buf h;
	bool isdir = true;
	uint64_t mnt;
	int fd, ret;

	/* Marks here only grow, so adding is what replacing means too; and
	 * FSNW_WATCH_EXCL_UNLINK has no fanotify counterpart (see the top). */
	(void)replace;
	/*
	 * One O_PATH fd for handle and mark, so both are of the same object
	 * even if the path changes meanwhile. Directories first: they are
	 * most of what is watched, and their mark takes directory bits.
	 */
	fd = openat(dirfd, path, oflags | O_DIRECTORY);
	w->st.sys_other++;
	if (fd < 0 && errno == ENOTDIR && !(flags & FSNW_WATCH_ONLYDIR)) {
		isdir = false;
		fd = openat(dirfd, path, oflags);
		w->st.sys_other++;
	}
	if (fd < 0)
		return -errno;
	ret = get_handle(w, fd, "", AT_EMPTY_PATH, &h, &mnt);
	if (ret == 0)
		ret = fs_of(w, mnt, fd, isdir, dirfd, path, flags, &fs);
	if (ret == 0)
		ret = mark_fd(w, FAN_MARK_ADD, fan_mask(mask, isdir), fd, isdir);
	close_counted(w, fd);
	if (ret < 0)
		return ret;
	make_key(fs, &h, key);
	key->bflags = isdir ? 0 : KKEY_NONDIR;
	return 0;
}

static int fan_identify(struct fsnw *w, int dirfd, const char *path, uint32_t flags,
			struct kkey *key)
{
	struct fan *f = w->be_state;
	struct fh_buf h;
	uint64_t mnt;
	int ret;

	/* Only on a mount seen before: a first sight needs mark's fd anyway
	 * (and without unique mount ids, a statfs would eat the saving). */
	if (f->no_unique_mnt)
		return -EOPNOTSUPP;
	ret = get_handle(w, dirfd, path, flags & FSNW_WATCH_DONT_FOLLOW ? 0 : AT_SYMLINK_FOLLOW,
			 &h, &mnt);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < f->nmnt; i++) {
		if (f->mnt[i].id == mnt) {
			make_key(&f->fs[f->mnt[i].fs], &h, key);
			return 0;
		}
	}
	return -ENOENT;
}

static int fan_cover(struct fsnw *w, int dirfd, const char *path, uint32_t mask, uint32_t flags,
		     struct kkey *key, struct kkey *fskey)
{
	struct fan_fs *fs;
	struct fh_buf h;
	uint64_t mnt, want;
	int ret;

	/* No fd needed: there is no mark of this directory's own to keep
	 * consistent with its handle. */
	ret = get_handle(w, dirfd, path, flags & FSNW_WATCH_DONT_FOLLOW ? 0 : AT_SYMLINK_FOLLOW,
			 &h, &mnt);
	if (ret == 0)
		ret = fs_of(w, mnt, -1, true, dirfd, path, flags, &fs);
	if (ret < 0)
		return ret;
	if (fs->no_cover)
		return -EOPNOTSUPP;
	/* The kernel adds what a filesystem mark needs to report names. */
	want = fan_mask(mask, true) & ~(uint64_t)FAN_EVENT_ON_CHILD;
	if ((fs->fsmask & want) != want) {
		ret = mark_fd(w, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, want, fs->mntfd, true);
		if (ret < 0) {
			/* Not on this filesystem (no fsid, a btrfs subvolume, ...):
			 * its directories get marks of their own from now on. */
			if (!fs->fsmask)
				fs->no_cover = true;
			return ret;
		}
		fs->fsmask |= want;
	}
	make_key(fs, &h, key);
	memset(fskey, 0, offsetof(struct kkey, bytes));
	fskey->wd = -1;
	fskey->len = FSID_LEN;
	memcpy(fskey->bytes, fs->fsid, FSID_LEN);
	return 0;
}

static int fan_unmark(struct fsnw *w, const struct kwatch *kw)
{
	struct fan_fs *fs = kw->keylen >= FSID_LEN ? fs_by_fsid(w->be_state, kw->key) : NULL;
	bool isdir = !(kw->bflags & KKEY_NONDIR);
	struct fh_buf h;
	uint32_t hbytes;
	int fd, ret;

	if (!fs)
		return 0; /* never marked through us */
	if (kw->keylen == FSID_LEN) {
		ret = mark_fd(w, FAN_MARK_REMOVE | FAN_MARK_FILESYSTEM, FAN_ALL_OURS, fs->mntfd,
			      true);
		fs->fsmask = 0;
		return ret == -ENOENT ? 0 : ret;
	}
	if (kw->keylen < FSID_LEN + sizeof(h.fh))
		return -EINVAL;
	memcpy(&hbytes, kw->key + FSID_LEN, sizeof(hbytes));
	if (hbytes > MAX_HANDLE_SZ || kw->keylen != FSID_LEN + sizeof(h.fh) + hbytes)
		return -EINVAL;
	memcpy(&h, kw->key + FSID_LEN, kw->keylen - FSID_LEN);
	fd = open_by_handle_at(fs->mntfd, &h.fh, O_PATH | O_CLOEXEC);
	w->st.sys_open_by_handle_at++;
	if (fd < 0) /* ESTALE: the object is gone, and with it the mark */
		return errno == ESTALE || errno == ENOENT ? 0 : -errno;
	ret = mark_fd(w, FAN_MARK_REMOVE, isdir ? FAN_ALL_OURS : FAN_ALL_OURS & ~(uint64_t)FAN_DIRONLY,
		      fd, isdir);
	close_counted(w, fd);
	/* ENOENT: no such mark, the kernel dropped it first. */
	return ret == -ENOENT ? 0 : ret;
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
	.identify = fan_identify,
	.decode = fan_decode,
	.max_record = FAN_RECORD_MAX,
	.stable_keys = true,
};
