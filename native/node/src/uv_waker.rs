//! Wakes JavaScript when a native fd is readable, on the thread that owns it: a libuv poll handle
//! on the worker thread's own loop (`napi_get_uv_event_loop`) watches the fd, and its callback
//! calls a JS function through `napi_make_callback`, so process.nextTick and promise jobs run
//! after it as they do after any I/O callback. No thread, no wake-up crossing threads.
//!
//! libuv's functions are the ones Node itself exports (the addon is loaded into node).

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ffi::{c_int, c_void};
use std::ptr;

use napi::sys;

type PollCallback = unsafe extern "C" fn(handle: *mut c_void, status: c_int, events: c_int);
type CloseCallback = unsafe extern "C" fn(handle: *mut c_void);

extern "C" {
    fn uv_handle_size(kind: c_int) -> usize;
    fn uv_poll_init(event_loop: *mut sys::uv_loop_s, handle: *mut c_void, fd: c_int) -> c_int;
    fn uv_poll_start(handle: *mut c_void, events: c_int, cb: PollCallback) -> c_int;
    fn uv_poll_stop(handle: *mut c_void) -> c_int;
    fn uv_close(handle: *mut c_void, cb: Option<CloseCallback>);
    fn uv_strerror(err: c_int) -> *const std::ffi::c_char;
}

/// uv_handle_type UV_POLL.
const UV_POLL: c_int = 8;
const UV_READABLE: c_int = 1;
/// Handles are at most this aligned (they hold pointers and ints).
const HANDLE_ALIGN: usize = 16;

struct Inner {
    env: sys::napi_env,
    handle: *mut c_void,
    callback: sys::napi_ref,
    context: sys::napi_async_context,
    /// The async cleanup hook (released by stop, or by the close callback after the cleanup).
    cleanup: sys::napi_async_cleanup_hook_handle,
    stopped: bool,
}

/// Calls `callback()` whenever `fd` is readable, until stopped (or the environment ends).
pub struct Waker {
    inner: *mut Inner,
}

fn check(status: sys::napi_status, what: &str) -> napi::Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::from_reason(format!("{what} failed (napi status {status})")))
    }
}

fn uv_check(code: c_int, what: &str) -> napi::Result<()> {
    if code == 0 {
        return Ok(());
    }
    // SAFETY: uv_strerror returns a static string.
    let text = unsafe { std::ffi::CStr::from_ptr(uv_strerror(code)) }.to_string_lossy().into_owned();
    Err(napi::Error::from_reason(format!("{what}: {text}")))
}

impl Waker {
    /// SAFETY: `env` is the current environment and `callback` a function value in it; `fd`
    /// stays open until `stop`.
    pub unsafe fn start(env: sys::napi_env, fd: c_int, callback: sys::napi_value) -> napi::Result<Waker> {
        let mut event_loop = ptr::null_mut();
        check(sys::napi_get_uv_event_loop(env, &mut event_loop), "napi_get_uv_event_loop")?;
        let layout = Layout::from_size_align(uv_handle_size(UV_POLL), HANDLE_ALIGN).unwrap();
        let handle = alloc_zeroed(layout) as *mut c_void;
        if let Err(e) = uv_check(uv_poll_init(event_loop, handle, fd), "uv_poll_init") {
            dealloc(handle as *mut u8, layout);
            return Err(e);
        }
        let mut reference = ptr::null_mut();
        check(sys::napi_create_reference(env, callback, 1, &mut reference), "napi_create_reference")?;
        let mut name = ptr::null_mut();
        let text = "spindle.net";
        check(sys::napi_create_string_utf8(env, text.as_ptr() as *const _, text.len() as isize, &mut name), "napi_create_string_utf8")?;
        let mut resource = ptr::null_mut();
        check(sys::napi_create_object(env, &mut resource), "napi_create_object")?;
        let mut context = ptr::null_mut();
        check(sys::napi_async_init(env, resource, name, &mut context), "napi_async_init")?;
        let inner = Box::into_raw(Box::new(Inner { env, handle, callback: reference, context, cleanup: ptr::null_mut(), stopped: false }));
        // uv_handle_t starts with `void* data`.
        *(handle as *mut *mut Inner) = inner;
        uv_check(uv_poll_start(handle, UV_READABLE, on_poll), "uv_poll_start")?;
        // An async cleanup hook, not a plain one: the environment's loop then runs until the
        // handle's close callback released the hook, so a thread that ends with the driver
        // running (process.exit, worker.terminate) closes its loop with no handle left open.
        check(
            sys::napi_add_async_cleanup_hook(env, Some(on_env_cleanup), inner as *mut c_void, &mut (*inner).cleanup),
            "napi_add_async_cleanup_hook",
        )?;
        Ok(Waker { inner })
    }

    /// Stops watching and releases the handle (idempotent).
    pub fn stop(&mut self) {
        if self.inner.is_null() {
            return;
        }
        // SAFETY: inner is live until here; the cleanup hook is removed before it is freed.
        unsafe {
            let inner = Box::from_raw(self.inner);
            self.inner = ptr::null_mut();
            if !inner.stopped {
                sys::napi_remove_async_cleanup_hook(inner.cleanup);
                close_handle(inner.handle);
                sys::napi_delete_reference(inner.env, inner.callback);
                sys::napi_async_destroy(inner.env, inner.context);
            }
        }
    }
}

impl Drop for Waker {
    fn drop(&mut self) {
        self.stop();
    }
}

unsafe fn close_handle(handle: *mut c_void) {
    uv_poll_stop(handle);
    *(handle as *mut *mut Inner) = ptr::null_mut();
    uv_close(handle, Some(free_handle));
}

unsafe extern "C" fn free_handle(handle: *mut c_void) {
    let layout = Layout::from_size_align(uv_handle_size(UV_POLL), HANDLE_ALIGN).unwrap();
    dealloc(handle as *mut u8, layout);
}

/// The environment (worker thread) is ending: the handle must be closed before its loop is. The
/// hook is released from the close callback, once libuv is done with the handle.
unsafe extern "C" fn on_env_cleanup(hook: sys::napi_async_cleanup_hook_handle, arg: *mut c_void) {
    let inner = &mut *(arg as *mut Inner);
    if inner.stopped {
        sys::napi_remove_async_cleanup_hook(hook);
        return;
    }
    inner.stopped = true;
    uv_poll_stop(inner.handle);
    // The handle's data now carries the hook to release (on_poll is never called again).
    *(inner.handle as *mut sys::napi_async_cleanup_hook_handle) = hook;
    uv_close(inner.handle, Some(free_handle_and_release));
}

unsafe extern "C" fn free_handle_and_release(handle: *mut c_void) {
    let hook = *(handle as *mut sys::napi_async_cleanup_hook_handle);
    free_handle(handle);
    sys::napi_remove_async_cleanup_hook(hook);
}

unsafe extern "C" fn on_poll(handle: *mut c_void, _status: c_int, _events: c_int) {
    let inner = *(handle as *mut *mut Inner);
    if inner.is_null() {
        return;
    }
    let inner = &*inner;
    let env = inner.env;
    let mut scope = ptr::null_mut();
    if sys::napi_open_handle_scope(env, &mut scope) != sys::Status::napi_ok {
        return;
    }
    let mut callback = ptr::null_mut();
    let mut global = ptr::null_mut();
    if sys::napi_get_reference_value(env, inner.callback, &mut callback) == sys::Status::napi_ok
        && !callback.is_null()
        && sys::napi_get_global(env, &mut global) == sys::Status::napi_ok
    {
        let mut result = ptr::null_mut();
        let status = sys::napi_make_callback(env, inner.context, global, callback, 0, ptr::null(), &mut result);
        if status == sys::Status::napi_pending_exception {
            // A throw in the callback is an uncaught exception of the thread, as from any I/O callback.
            let mut error = ptr::null_mut();
            if sys::napi_get_and_clear_last_exception(env, &mut error) == sys::Status::napi_ok {
                sys::napi_fatal_exception(env, error);
            }
        }
    }
    sys::napi_close_handle_scope(env, scope);
}
