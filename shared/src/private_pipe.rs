//! Windows: the named pipe a server listens on for the worker it spawned,
//! which only the server's own user can open.
//!
//! The Unix counterpart is a socket file of mode 0600 in a private 0700
//! directory with the peer's uid checked. A named pipe has no directory: by
//! default Windows gives its instances a DACL that lets *Everyone* open them
//! for reading. So the pipe is created with an explicit security descriptor
//! whose protected DACL has one entry, full access for the user the server
//! runs as (its SID from the process token), in SDDL `D:P(A;;GA;;;<SID>)`;
//! interprocess creates its first instance with `FILE_FLAG_FIRST_PIPE_INSTANCE`
//! (so a pipe of that name made earlier by anyone else makes this fail
//! instead of being shared) and `PIPE_REJECT_REMOTE_CLIENTS`. The server
//! accepts one client ([`accept_one`]) and then drops the listener, so no
//! instance is left for a second client: its connect fails.

use std::io;

use interprocess::local_socket::tokio::{Listener, Stream, prelude::*};
use interprocess::local_socket::{GenericNamespaced, ListenerOptions};
use interprocess::os::windows::local_socket::ListenerOptionsExt;
use interprocess::os::windows::security_descriptor::SecurityDescriptor;

/// The security descriptor (SDDL) of a pipe only `sid` may open.
pub fn sddl_for(sid: &str) -> String {
    format!("D:P(A;;GA;;;{sid})")
}

/// Listens on the pipe `\\.\pipe\<name>`, which only the current user may
/// open (module docs).
///
/// Errors: the user's SID cannot be read, or the pipe cannot be created
/// (for example because a pipe of that name exists).
pub fn listen(name: &str) -> io::Result<Listener> {
    let sid = sid::current_user()?;
    let sddl = widestring::U16CString::from_str(sddl_for(&sid))
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let sd = SecurityDescriptor::deserialize(&sddl)?;
    let pipe = name.to_ns_name::<GenericNamespaced>()?;
    ListenerOptions::new()
        .name(pipe)
        .security_descriptor(sd)
        .create_tokio()
}

/// Accepts one client, then closes the listener: a second client finds no
/// instance of the pipe to open.
///
/// Errors: the accept's own.
pub async fn accept_one(listener: Listener) -> io::Result<Stream> {
    let stream = listener.accept().await;
    drop(listener);
    stream
}

/// The current user's SID from the process token: the only unsafe code of
/// the shared crate. `OpenProcessToken` and `GetTokenInformation` fill
/// buffers of the sizes they are given; `ConvertSidToStringSidW` allocates
/// the string, which is read up to its NUL and freed with `LocalFree`.
#[allow(unsafe_code)]
mod sid {
    use std::io;

    use windows_sys::Win32::Foundation::{CloseHandle, HANDLE, LocalFree};
    use windows_sys::Win32::Security::Authorization::ConvertSidToStringSidW;
    use windows_sys::Win32::Security::{GetTokenInformation, TOKEN_QUERY, TOKEN_USER, TokenUser};
    use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

    struct Token(HANDLE);
    impl Drop for Token {
        fn drop(&mut self) {
            // SAFETY: the handle came from OpenProcessToken and is closed once.
            unsafe { CloseHandle(self.0) };
        }
    }

    /// The SID of the user this process runs as, e.g. `S-1-5-21-...-1001`.
    pub fn current_user() -> io::Result<String> {
        let mut raw: HANDLE = std::ptr::null_mut();
        // SAFETY: GetCurrentProcess returns a pseudo-handle; `raw` receives
        // the token handle.
        if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut raw) } == 0 {
            return Err(io::Error::last_os_error());
        }
        let token = Token(raw);
        let mut len = 0u32;
        // SAFETY: a null buffer of size 0 asks for the size needed.
        unsafe { GetTokenInformation(token.0, TokenUser, std::ptr::null_mut(), 0, &mut len) };
        if len == 0 {
            return Err(io::Error::last_os_error());
        }
        // u64 elements: aligned for TOKEN_USER.
        let mut buf = vec![0u64; (len as usize).div_ceil(8)];
        // SAFETY: `buf` holds at least `len` bytes.
        if unsafe {
            GetTokenInformation(token.0, TokenUser, buf.as_mut_ptr().cast(), len, &mut len)
        } == 0
        {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the call wrote a TOKEN_USER at the start of the aligned
        // buffer; its SID pointer points into the same buffer.
        let user = unsafe { &*buf.as_ptr().cast::<TOKEN_USER>() };
        let mut text: *mut u16 = std::ptr::null_mut();
        // SAFETY: the SID is valid (above); `text` receives a LocalAlloc'ed
        // NUL-terminated string.
        if unsafe { ConvertSidToStringSidW(user.User.Sid, &mut text) } == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `text` is NUL-terminated; it is read up to the NUL, then
        // freed once.
        let s = unsafe {
            let mut n = 0;
            while *text.add(n) != 0 {
                n += 1;
            }
            let s = String::from_utf16_lossy(std::slice::from_raw_parts(text, n));
            LocalFree(text.cast());
            s
        };
        Ok(s)
    }
}

pub use sid::current_user as current_user_sid;
