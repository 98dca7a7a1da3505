// APNs Sandbox — instance directories are emptied and reused, and look new to the next instance.
import Foundation
import Glibc
import Testing

@testable import ExtensionRuntime

@Suite struct InstanceDirectoriesTests {
    private static func inode(_ path: String) -> UInt? {
        var info = stat()
        return lstat(path, &info) == 0 ? UInt(info.st_ino) : nil
    }

    /// A finished instance's directory is emptied (whatever it held, read-only parts included) and comes
    /// back, empty and 0755, as a later instance's directory; its old path is gone.
    @Test func aRecycledDirectoryIsReusedEmpty() throws {
        let data = try TemporaryDirectory()
        let directories = InstanceDirectories(root: data.path + "/instances")
        let first = data.path + "/instances/a-1"
        try directories.make(first)
        try FileManager.default.createDirectory(atPath: first + "/sub/deeper", withIntermediateDirectories: true)
        try Data("x".utf8).write(to: URL(fileURLWithPath: first + "/sub/deeper/file"))
        try Data("y".utf8).write(to: URL(fileURLWithPath: first + "/.hidden"))
        chmod(first + "/sub", 0o500)
        chmod(first, 0o500)
        let original = Self.inode(first)

        directories.recycle(first)
        #expect(!FileManager.default.fileExists(atPath: first))
        #expect(directories.freeCount == 1)

        let second = data.path + "/instances/a-2"
        try directories.make(second)
        #expect(Self.inode(second) == original)
        #expect(try FileManager.default.contentsOfDirectory(atPath: second).isEmpty)
        var info = stat()
        #expect(stat(second, &info) == 0 && info.st_mode & 0o777 == 0o755)
        #expect(directories.freeCount == 0)

        // None kept: a new one.
        try directories.make(data.path + "/instances/a-3")
        #expect(FileManager.default.fileExists(atPath: data.path + "/instances/a-3"))
    }

    /// A path that is no longer a directory of its own (the extension replaced it by a symbolic link) is
    /// removed, not kept, and what the link pointed to is left alone.
    @Test func aReplacedDirectoryIsNotKept() throws {
        let data = try TemporaryDirectory()
        let directories = InstanceDirectories(root: data.path + "/instances")
        let elsewhere = data.path + "/elsewhere"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try Data("keep".utf8).write(to: URL(fileURLWithPath: elsewhere + "/file"))
        let path = data.path + "/instances/b-1"
        try directories.make(path)
        rmdir(path)
        symlink(elsewhere, path)

        directories.recycle(path)
        #expect(directories.freeCount == 0)
        #expect(Self.inode(path) == nil)
        #expect(FileManager.default.fileExists(atPath: elsewhere + "/file"))
    }
}
