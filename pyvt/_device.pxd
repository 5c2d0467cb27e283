# The device-interop module's C-level interface, cimported by _ops.pyx (its linears read device
# arguments and return DeviceArrays through these).

cdef class DeviceArray:
    cdef void* _ptr
    cdef int _dev
    cdef tuple _shape
    cdef Py_ssize_t _size
    cdef object _stream  # cudaStream_t as an int (0 = legacy default)
    cdef void* _data(self) except NULL


cdef class _DevView:
    cdef size_t ptr
    cdef tuple shape
    cdef object stream  # cudaStream_t to order on (int), from the producer
    cdef object keep    # the object (and a consumed DLPack tensor), alive for the call


cdef object _stream_arg(object stream)
cdef DeviceArray _empty_device(int dev, tuple shape, object stream)
cdef DeviceArray _upload(object host, int dev, object stream)
cdef bint _is_device_array(object x) except -1
cdef object _consumer_stream(object x, object cai_stream, int dev)
cdef _DevView _dev_arg(object x, str name, int dev, object dl_stream)
